"""A user's mistake is one clear line naming what is wrong, exit status 2, never a traceback; a read creates
no ledger."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import POSTGRES_URL, caseboard, scenario_lines


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    return done.stderr


def with_env(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CASEBOARD_")}
    return subprocess.run(
        [sys.executable, "-m", "caseboard", *args],
        env={**base, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("command", [["dispatch", "--once"], ["worker", "--all-tenants"], ["outbox", "status"]])
@pytest.mark.parametrize("url", ["notaurl", "http://127.0.0.1:6379/0", "redis://127.0.0.1:port/0", "redis://h/x"])
def test_a_bad_redis_url_is_one_line_naming_the_setting(command: list[str], url: str, tmp_path: Path) -> None:
    done = with_env(
        *command,
        cwd=tmp_path,
        CASEBOARD_REDIS_URL=url,
        CASEBOARD_DATABASE_URL="postgresql://postgres@127.0.0.1:5432/test",
    )
    assert "CASEBOARD_REDIS_URL" in one_line(done)
    assert url in done.stderr


def test_replay_of_a_path_that_is_neither_a_file_nor_a_workspace_says_the_file_is_missing(tmp_path: Path) -> None:
    done = caseboard("replay", "nosuchfile.jsonl", url=f"sqlite:///{tmp_path}/ledger.db", cwd=tmp_path)
    assert "cannot read nosuchfile.jsonl: no such file" in one_line(done)
    done = caseboard("verify", "exports/incident-042.jsonl", url=f"sqlite:///{tmp_path}/ledger.db", cwd=tmp_path)
    assert "no such file" in one_line(done)


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["submit", "incident-042", "--file", "folder"], "cannot read folder: Is a directory"),
        (["import", "folder"], "cannot read folder: Is a directory"),
        (["verify", "folder"], "cannot read folder: Is a directory"),
        (["artifacts", "put", "folder"], "cannot read folder: Is a directory"),
        (["replay", "folder"], "folder is a directory; replay takes one recorded incident file"),
    ],
)
def test_a_folder_given_for_a_file_is_named_a_directory(command: list[str], said: str, tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    done = caseboard(*command, url=f"sqlite:///{tmp_path}/ledger.db", cwd=tmp_path)
    assert one_line(done) == f"caseboard: {said}\n"


@pytest.mark.parametrize(
    "command",
    [
        ["verify"],
        ["import"],
        ["replay"],
        ["report", "--out", "page.html"],
        ["diff", "--from", "1", "--to", "2"],
        ["explain"],
        ["compare", "--reducer", "workspace-rules-v1", "--reducer", "workspace-rules-v4"],
    ],
)
def test_a_device_or_a_pipe_given_for_a_recorded_incident_is_refused_unread(command: list[str], tmp_path: Path) -> None:
    # A recorded incident is read more than once (verify's second pass), and /dev/zero never ends: before, verify
    # and import of /dev/zero read it for ever, replay called it a directory, compare said it did not exist.
    os.mkfifo(tmp_path / "pipe")
    for name in ("/dev/zero", str(tmp_path / "pipe")):
        args = [command[0], name, *command[1:]]
        if command[0] == "explain":
            args = ["explain", name, "obs-1"]
        done = caseboard(*args, url=f"sqlite:///{tmp_path}/ledger.db", cwd=tmp_path)
        assert one_line(done) == (
            f"caseboard: cannot read {name}: not a regular file (a device or a pipe); "
            "save the recorded incident to a file first\n"
        )
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["worker", "--all-tenants", "--tick", "0"], "argument --tick: '0' is not a number of seconds"),
        (["worker", "--all-tenants", "--threads", "257"], "argument --threads: '257' is not a number of threads"),
        (["worker", "--all-tenants", "--turn-timeout", "inf"], "argument --turn-timeout: 'inf' is not a number"),
        (["specialist", "--source", "s", "--tick", "nan"], "argument --tick: 'nan' is not a number of seconds"),
        (["specialist", "--source", "s", "--principal", "a b"], "argument --principal: 'a b' is not a principal"),
        (["dispatch", "--poll", "-1"], "argument --poll: '-1' is not a number of seconds"),
        (["dispatch", "--redrive-after", "1e9"], "argument --redrive-after: '1e9' is not a number of seconds"),
        (["serve", "--header-timeout", "nan"], "argument --header-timeout: 'nan' is not a number of seconds"),
        (["pilot", "--timeout", "0"], "argument --timeout: '0' is not a number of seconds"),
        (["demo", "--live", "--timeout", "-1"], "argument --timeout: '-1' is not a number of seconds"),
        (["worker", "--tenant", ""], "argument --tenant: '' is not a tenant"),
        (
            ["agent", "--role", "planner", "--principal", "p", "--tenant", "t", "--workspace", "a/b"],
            "argument --workspace: 'a/b' is not a workspace id: letters, digits and ._:@- (no '/')",
        ),
        (
            ["keys", "create", "--principal", "p", "--role", "operator", "--tenant", "a b"],
            "argument --tenant: 'a b' is not a tenant",
        ),
        (
            ["keys", "create", "--principal", "../p", "--role", "operator", "--tenant", "t"],
            "argument --principal: '../p' is not a principal",
        ),
        (["knowledge", "search", "--service", "s", "--tenant", "a,b"], "argument --tenant: 'a,b' is not a tenant"),
        # Before: a key's note was kept with its control characters, or 100,000 characters long, and listed so.
        (
            ["keys", "create", "--principal", "p", "--role", "operator", "--tenant", "t", "--label", "a\x1bb"],
            "argument --label: a label holds no control character (U+001B",
        ),
        (
            ["keys", "create", "--principal", "p", "--role", "operator", "--tenant", "t", "--label", "x" * 257],
            "argument --label: a label is 1 to 256 characters, not 257",
        ),
        # Before: a queue of a kind no request can have ('x y'), or none at all (','), was consumed in vain.
        (["worker", "--all-tenants", "--kinds", ","], "argument --kinds: ',' is not a comma list of request kinds"),
        (["worker", "--all-tenants", "--kinds", "log_query,x y"], "'x y' is not a request kind"),
        (["agent", "--role", "specialist", "--principal", "p", "--tenant", "t", "--kind", "x y"], "'x y' is not a"),
        # Before: refused by the contract after the demo had started, in pydantic's words.
        (["demo", "--live", "--workspace", "a/b"], "argument --workspace: 'a/b' is not a workspace id"),
        (["demo", "--live", "--cycles", "-1"], "argument --cycles: '-1' is not a number of cycles"),
        # Before: a dispatcher's position was stored, or looked up, under any text at all.
        (["outbox", "status", "--name", "a\x1bb"], "argument --name: 'a\\x1bb' is not a dispatcher's name"),
        (["dispatch", "--once", "--name", ""], "argument --name: '' is not a dispatcher's name"),
    ],
)
def test_a_process_s_interval_threads_or_principal_out_of_range_is_one_line(
    command: list[str], said: str, tmp_path: Path
) -> None:
    # Before: 0, a negative or nan seconds spun a core (the loop never waited), inf ended in a traceback, and a
    # principal that is no id started a process whose every contribution was refused. A tenant no key can hold
    # was acted for, searched or stored under in vain; a workspace id with '/' named none.
    done = caseboard(*command, url=f"sqlite:///{tmp_path}/ledger.db", cwd=tmp_path)
    assert said in one_line(done)


def test_the_outbox_status_of_a_dispatcher_that_never_ran_names_those_that_did(tmp_path: Path) -> None:
    # Before: a mistyped name showed position 0 and everything pending, as if the dispatcher were stuck.
    url = f"sqlite:///{tmp_path}/ledger.db"
    assert caseboard("demo", "--live", url=url, cwd=tmp_path).returncode == 0  # its dispatcher stores a position
    known = caseboard("outbox", "status", url=url, cwd=tmp_path)
    assert known.returncode == 0 and json.loads(known.stdout)["pending"] == 0
    said = one_line(caseboard("outbox", "status", "--name", "dispatcher-2", url=url, cwd=tmp_path))
    assert "no dispatcher named 'dispatcher-2' has run on this ledger (those that have: dispatcher)" in said


def test_an_artifact_is_not_stored_under_a_tenant_no_key_can_hold(tmp_path: Path) -> None:
    # Before: stored, and listed under '../../x', where no workspace's citation could ever reach it.
    url = f"sqlite:///{tmp_path}/ledger.db"
    (tmp_path / "a.log").write_text("hello\n")
    done = caseboard("artifacts", "put", "a.log", "--tenant", "../../x", url=url, cwd=tmp_path)
    assert one_line(done).startswith("caseboard: argument --tenant: '../../x' is not a tenant: letters, digits")
    assert not (tmp_path / "artifacts").exists()


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        # Before: stored with stored_by '../x y', a name no key's principal can have.
        (["--stored-by", "../x y"], "argument --stored-by: '../x y' is not a principal"),
        # Before: stored with an empty media type, served back as an empty Content-Type.
        (["--media-type", ""], "argument --media-type: a media type is 1 to 255 characters, not 0"),
        # Before: stored with the control character, which HTTP refuses in a query string.
        (["--source-system", "auth\x1b[2Jlogs"], "a source system holds no control character (U+001B in"),
        (["--source-system", "x" * 257], "a source system is 1 to 256 characters, not 257"),
    ],
)
def test_what_is_recorded_with_an_artifact_is_checked_as_http_checks_it(
    extra: list[str], said: str, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    (tmp_path / "a.log").write_text("hello\n")
    done = caseboard("artifacts", "put", "a.log", *extra, url=url, cwd=tmp_path)
    assert said in one_line(done)
    listed = caseboard("artifacts", "list", url=url, cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout == ""


@pytest.mark.parametrize("action", [["get"], ["excerpt", "--lines", "1-2"], ["remove"]])
def test_a_malformed_artifact_id_is_named_as_such(action: list[str], tmp_path: Path) -> None:
    # Before: "artifact sha256:zz is not in this tenant's artifact store", as if it were an id.
    url = f"sqlite:///{tmp_path}/ledger.db"
    done = caseboard("artifacts", action[0], "sha256:zz", *action[1:], url=url, cwd=tmp_path)
    assert "argument artifact_id: 'sha256:zz' is not an artifact id: 'sha256:' and 64" in one_line(done)


def test_an_empty_file_or_input_is_not_stored_as_an_artifact(tmp_path: Path) -> None:
    """As over HTTP (ADR 0173): an artifact holds at least one byte."""
    url = f"sqlite:///{tmp_path}/ledger.db"
    (tmp_path / "empty.log").write_bytes(b"")
    done = caseboard("artifacts", "put", "empty.log", url=url, cwd=tmp_path)
    assert one_line(done) == "caseboard: empty.log is empty: an artifact holds at least one byte\n"
    piped = subprocess.run(
        [sys.executable, "-m", "caseboard", "artifacts", "put", "-"],
        input="",
        env={**os.environ, "CASEBOARD_DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert one_line(piped) == "caseboard: standard input is empty: an artifact holds at least one byte\n"
    listed = caseboard("artifacts", "list", url=url, cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout == ""


def test_an_excerpts_sidecar_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    lines = tmp_path / "in.jsonl"
    lines.write_text(scenario_lines()[0] + "\n")
    assert caseboard("submit", "incident-042", "--file", str(lines), url=url).returncode == 0
    (tmp_path / "out.jsonl.excerpts.jsonl").mkdir()
    done = caseboard("export", "incident-042", "--out", "out.jsonl", "--with-excerpts", url=url, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == "caseboard: cannot write out.jsonl.excerpts.jsonl: Is a directory"


@pytest.mark.parametrize(
    "command",
    [
        ["show", "incident-042"],
        ["show", "incident-042", "--at-version", "20", "--format", "yaml"],
        ["log", "incident-042"],
        ["timeline", "incident-042"],
        ["export", "incident-042"],
        ["replay", "incident-042"],
        ["verify", "incident-042"],
        ["replay", "nosuchfile.jsonl"],
    ],
)
def test_a_failed_read_never_creates_an_empty_ledger_file(command: list[str], tmp_path: Path) -> None:
    done = with_env(*command, cwd=tmp_path)  # the default ledger, .caseboard/ledger.db, does not exist
    one_line(done)
    assert not (tmp_path / ".caseboard").exists()
    elsewhere = tmp_path / "ledger.db"
    done = caseboard(*command, url=f"sqlite:///{elsewhere}", cwd=tmp_path)
    one_line(done)
    assert not elsewhere.exists()


def test_a_postgres_database_that_does_not_exist_is_named_with_how_to_create_it(
    postgres_available: str, tmp_path: Path
) -> None:
    base = POSTGRES_URL.rsplit("/", 1)[0]
    done = caseboard("show", "incident-042", url=f"{base}/no_such_database_cb", cwd=tmp_path)
    line = one_line(done)
    assert "'no_such_database_cb' does not exist" in line
    assert "createdb" in line
    assert "cannot reach" not in line


def limited(*args: str, url: str, cwd: Path, stdout: Any = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    """The command line with files limited to 8 KiB, as a full disk limits them: a write past it fails (EFBIG)."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of the process being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))

    env = {**os.environ, "CASEBOARD_DATABASE_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "caseboard", *args],
        env=env,
        cwd=cwd,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=limit,
    )


def test_a_write_the_disk_refuses_is_one_line_and_leaves_no_part_of_a_file(tmp_path: Path, postgres_url: str) -> None:
    # Before: export and report left the first 8 KiB of the file behind, as if whole, and a refused write to
    # standard output ended in a traceback. (PostgreSQL: a SQLite ledger is a file the limit would refuse too.)
    url = postgres_url
    assert caseboard("demo", url=url, cwd=tmp_path).returncode == 0
    for args, out in (
        (["export", "incident-042", "--out", "e.jsonl"], "e.jsonl"),
        (["report", "incident-042", "--out", "r.html"], "r.html"),
    ):
        done = limited(*args, url=url, cwd=tmp_path)
        assert one_line(done) == f"caseboard: cannot write {out}: File too large\n"
        assert not (tmp_path / out).exists()
        # An earlier file of that name stays whole (before: emptied, then removed), and no part is left beside it.
        (tmp_path / out).write_text("an earlier one\n")
        assert one_line(limited(*args, url=url, cwd=tmp_path)) == f"caseboard: cannot write {out}: File too large\n"
        assert (tmp_path / out).read_text() == "an earlier one\n"
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(out)) == [out]
    with (tmp_path / "stdout.jsonl").open("w") as sink:
        done = limited("export", "incident-042", url=url, cwd=tmp_path, stdout=sink)
    assert (done.returncode, done.stderr) == (
        2,
        "caseboard: cannot write its output: File too large; what was written is incomplete\n",
    )


def test_an_export_of_an_unknown_workspace_leaves_its_out_file_and_links_alone(tmp_path: Path) -> None:
    # Before: --out was opened (emptied) first, then removed: a link there was deleted and its target emptied.
    url = f"sqlite:///{tmp_path}/ledger.db"
    assert caseboard("demo", url=url, cwd=tmp_path).returncode == 0  # a ledger: without one, nothing is opened
    (tmp_path / "kept.jsonl").write_text("an earlier export\n")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "kept.jsonl")
    for out in ("link.jsonl", "kept.jsonl"):
        done = caseboard("export", "nope", "--out", out, url=url, cwd=tmp_path)
        assert "unknown workspace 'nope'" in one_line(done)
    assert (tmp_path / "link.jsonl").is_symlink()
    assert (tmp_path / "kept.jsonl").read_text() == "an earlier export\n"


def test_out_follows_a_link_and_writes_a_device_as_it_is(tmp_path: Path) -> None:
    """``--out`` through a link replaces the link's target, never the link; a device is written as it is; the
    file is written beside it under a name of its own, never through what lies there already."""
    url = f"sqlite:///{tmp_path}/ledger.db"
    assert caseboard("demo", url=url, cwd=tmp_path).returncode == 0
    expected = caseboard("export", "incident-042", url=url, cwd=tmp_path).stdout
    (tmp_path / "kept.jsonl").write_text("an earlier export\n")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "kept.jsonl")
    assert caseboard("export", "incident-042", "--out", "link.jsonl", url=url, cwd=tmp_path).returncode == 0
    assert (tmp_path / "link.jsonl").is_symlink()
    assert (tmp_path / "kept.jsonl").read_text() == expected
    # A link put where a fixed temporary name would be is not written through (it was, by artifacts get).
    (tmp_path / "victim").write_text("not an export\n")
    (tmp_path / "out.jsonl.partial").symlink_to(tmp_path / "victim")
    assert caseboard("export", "incident-042", "--out", "out.jsonl", url=url, cwd=tmp_path).returncode == 0
    assert (tmp_path / "victim").read_text() == "not an export\n"
    assert (tmp_path / "out.jsonl").read_text() == expected and not (tmp_path / "out.jsonl").is_symlink()
    artifact = json.loads(caseboard("artifacts", "put", "victim", url=url, cwd=tmp_path).stdout)["artifact_id"]
    (tmp_path / "a.log.partial").symlink_to(tmp_path / "kept.jsonl")
    assert caseboard("artifacts", "get", artifact, "--out", "a.log", url=url, cwd=tmp_path).returncode == 0
    assert (tmp_path / "kept.jsonl").read_text() == expected and (tmp_path / "a.log").read_text() == "not an export\n"
    to_device = caseboard("export", "incident-042", "--out", "/dev/stdout", url=url, cwd=tmp_path)
    assert (to_device.returncode, to_device.stdout) == (0, expected)
    assert Path("/dev/stdout").exists()


def test_serve_demo_does_not_empty_a_folder_it_did_not_make(tmp_path: Path) -> None:
    # Before: --demo-dir was removed whatever it held, errors ignored: --demo-dir . emptied the user's folder.
    (tmp_path / "thesis.txt").write_text("precious\n")
    done = caseboard("serve", "--demo", "--demo-dir", ".", "--port", "1", url="sqlite:///unused.db", cwd=tmp_path)
    assert one_line(done) == (
        f"caseboard: --demo-dir {tmp_path} holds files caseboard did not make, and it empties that folder first: "
        "give a new or empty folder (one an older caseboard made has no .caseboard-made: remove it by hand)\n"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["thesis.txt"]


def test_out_never_replaces_a_sqlite_database_such_as_the_ledger(tmp_path: Path) -> None:
    # Before: export --out ledger.db replaced the ledger with its own export ("file is not a database" after).
    url = f"sqlite:///{tmp_path}/ledger.db"
    assert caseboard("demo", url=url, cwd=tmp_path).returncode == 0
    for command in (["export", "incident-042"], ["report", "incident-042"]):
        done = caseboard(*command, "--out", "ledger.db", url=url, cwd=tmp_path)
        assert (
            one_line(done)
            == "caseboard: ledger.db is a SQLite database (a ledger?): it is not written over; give another file\n"
        )
    shown = caseboard("show", "incident-042", url=url, cwd=tmp_path)
    assert shown.returncode == 0 and "incident-042" in shown.stdout
    assert not list(tmp_path.glob("*.partial"))
