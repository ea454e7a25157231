"""The real command line, in subprocesses: ``python -m caseboard`` on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse, urlunparse

import pytest
import yaml

from tests.conftest import caseboard, caseboard_measured, scenario_dir, scenario_lines, stale_install

WS = "incident-042"


def jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def write_lines(path: Path, lines: list[str]) -> str:
    path.write_text("".join(line.rstrip("\n") + "\n" for line in lines), encoding="utf-8")
    return str(path)


def contains(actual: Any, expected: Any, path: str = "$") -> list[str]:
    """Every key of ``expected`` is in ``actual`` with exactly its value; lists are equal, in order."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected a mapping, got {actual!r}"]
        return [
            problem
            for key, value in expected.items()
            for problem in (
                contains(actual[key], value, f"{path}.{key}") if key in actual else [f"{path}.{key}: missing"]
            )
        ]
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {expected!r}, got {actual!r}"]
        return [
            problem
            for index, (a, e) in enumerate(zip(actual, expected, strict=True))
            for problem in contains(a, e, f"{path}[{index}]")
        ]
    return [] if actual == expected else [f"{path}: expected {expected!r}, got {actual!r}"]


def test_the_contains_check_finds_missing_keys_changed_values_and_reordered_lists() -> None:
    expected = {"a": 1, "b": {"c": [1, {"d": "x"}]}}
    assert contains({"a": 1, "b": {"c": [1, {"d": "x", "e": 2}]}, "f": 3}, expected) == []
    assert contains({"b": {"c": [1, {"d": "x"}]}}, expected) == ["$.a: missing"]
    assert contains({"a": 1, "b": {"c": [1, {"d": "y"}]}}, expected) == ["$.b.c[1].d: expected 'x', got 'y'"]
    assert contains({"a": 1, "b": {"c": [{"d": "x"}, 1]}}, expected) != []
    assert contains({"a": 1, "b": {"c": [1]}}, expected) != []


@dataclass
class Played:
    """incident-042 submitted through the command line: lines 1..19, the stale install, line 20."""

    url: str
    first: subprocess.CompletedProcess[str]
    stale: subprocess.CompletedProcess[str]
    last: subprocess.CompletedProcess[str]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = caseboard(*args, url=self.url)
        assert done.returncode == 0, done.stderr
        return done


def play(url: str, folder: Path) -> Played:
    lines = scenario_lines()
    assert len(lines) == 20

    def submit(name: str, chosen: list[str]) -> subprocess.CompletedProcess[str]:
        path = write_lines(folder / name, chosen)
        return caseboard("submit", WS, "--file", path, "--trust-timestamps", url=url)

    first = submit("1-19.jsonl", lines[:19])
    stale = submit("stale.jsonl", [stale_install()])
    return Played(url, first, stale, submit("20.jsonl", lines[19:]))


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def played(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    folder = tmp_path_factory.mktemp(f"cli-{request.param}")
    if request.param == "sqlite":
        yield play(f"sqlite:///{folder}/ledger.db", folder)
        return
    import psycopg

    server = request.getfixturevalue("postgres_available")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    try:
        yield play(f"{server}?schema={schema}", folder)
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_submit_prints_one_accepted_outcome_per_line_in_order_and_exits_zero(played: Played) -> None:
    assert played.first.returncode == 0, played.first.stderr
    outcomes = jsonl(played.first.stdout)
    assert [(o["ok"], o["workspace_version"]) for o in outcomes] == [(True, v) for v in range(1, 20)]
    assert played.last.returncode == 0, played.last.stderr
    assert [(o["ok"], o["workspace_version"]) for o in jsonl(played.last.stdout)] == [(True, 20)]
    assert "Traceback" not in played.first.stderr + played.last.stderr


def test_the_stale_install_exits_one_with_a_version_conflict_at_version_19(played: Played) -> None:
    assert played.stale.returncode == 1
    [outcome] = jsonl(played.stale.stdout)
    assert outcome["ok"] is False
    assert outcome["reason"] == "version_conflict"
    assert outcome["current_version"] == 19
    assert outcome["line"] == 1
    assert [c["workspace_version"] for c in outcome["since"]] == [19]


def test_show_at_version_20_as_yaml_has_every_key_of_the_source_document(played: Played) -> None:
    expected = yaml.safe_load((scenario_dir() / "incident-042.v20.yaml").read_text(encoding="utf-8"))
    named = ("--reducer", expected["reducer_version"])  # the document names the reducer it was rendered by
    shown = yaml.safe_load(played.run("show", WS, "--at-version", "20", *named, "--format", "yaml").stdout)
    assert contains(shown, expected) == []
    current = yaml.safe_load(played.run("show", WS, "--at-version", "20", "--format", "yaml").stdout)
    assert contains(current, {**expected, "reducer_version": current["reducer_version"]}) == []


def test_show_at_versions_18_and_19_replays_support_then_the_challenge(played: Played) -> None:
    v18 = json.loads(played.run("show", WS, "--at-version", "18").stdout)
    v19 = json.loads(played.run("show", WS, "--at-version", "19", "--reducer", "workspace-rules-v1").stdout)
    assert (v18["workspace_version"], v19["workspace_version"]) == (18, 19)
    hyp = "hyp-certificate-initiated-failure"

    def hypotheses(shown: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
        selected = shown["selected_items"]["hypotheses"]
        return [(h["id"], h["status"], h["challenging_evidence"]) for h in selected]

    assert hypotheses(v18) == [(hyp, "supported", [])]
    assert hypotheses(v19) == [(hyp, "challenged", ["obs-failures-before-change"])]


def test_log_prints_one_json_object_per_commit_from_version_1_to_20(played: Played) -> None:
    commits = jsonl(played.run("log", WS).stdout)
    assert [c["workspace_version"] for c in commits] == list(range(1, 21))
    assert all(c["workspace_id"] == WS for c in commits)


def test_timeline_orders_observations_by_event_time_with_their_ingestion_times(played: Played) -> None:
    entries = jsonl(played.run("timeline", WS).stdout)
    ids = [e["id"] for e in entries]
    order = ["obs-failures-before-change", "obs-certificate-change", "obs-authentication-failures"]
    assert [i for i in ids if i in order] == order
    event_times = [datetime.fromisoformat(e["event_time"]) for e in entries]
    assert event_times == sorted(event_times)
    by_id = {e["id"]: e for e in entries}
    assert [by_id[i]["event_time"][11:16] for i in order] == ["13:57", "14:00", "14:03"]
    ingested = {}  # the commit clock ("at") of the line that recorded each observation
    for line in scenario_lines():
        for obs_id in order:
            if f'"id": "{obs_id}"' in line:
                ingested[obs_id] = datetime.fromisoformat(json.loads(line)["at"])
    assert {i: datetime.fromisoformat(by_id[i]["ingested_at"]) for i in order} == ingested
    assert ingested["obs-failures-before-change"] > ingested["obs-authentication-failures"]  # late, yet first


def test_submit_answers_every_line_in_order_and_exits_one_when_any_was_refused(tmp_path: Path) -> None:
    lines = scenario_lines()
    url = f"sqlite:///{tmp_path}/ledger.db"
    malformed = '{"workspace_id": "incident-042", '
    file = write_lines(tmp_path / "mixed.jsonl", [lines[0], lines[1], malformed, lines[2]])
    done = caseboard("submit", WS, "--file", file, "--trust-timestamps", url=url)
    assert done.returncode == 1
    outcomes = jsonl(done.stdout)
    assert [(o["ok"], o.get("workspace_version"), o.get("reason"), o.get("line")) for o in outcomes] == [
        (True, 1, None, None),
        (True, 2, None, None),
        (False, None, "invalid", 3),
        (True, 3, None, None),
    ]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_a_line_that_is_not_utf8_is_refused_alone_and_the_lines_after_it_are_answered(
    tmp_path: Path, source: str
) -> None:
    lines = [line.encode() for line in scenario_lines()[:2]]
    data = lines[0] + b"\n" + b'{"workspace_id": "incident-042", "author": "\xff"}\n' + lines[1] + b"\n"
    (tmp_path / "input.jsonl").write_bytes(data)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "caseboard",
            "submit",
            WS,
            "--trust-timestamps",
            "--file",
            str(tmp_path / "input.jsonl") if source == "file" else "-",
        ],
        input=data if source == "stdin" else None,
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "CASEBOARD_DATABASE_URL": f"sqlite:///{tmp_path}/ledger.db", "LC_ALL": "C.UTF-8"},
    )
    assert done.returncode == 1
    assert b"Traceback" not in done.stderr
    outcomes = jsonl(done.stdout.decode())
    assert [(o["ok"], o.get("workspace_version"), o.get("reason")) for o in outcomes] == [
        (True, 1, None),
        (False, None, "invalid"),
        (True, 2, None),
    ]
    assert "UTF-8" in outcomes[1]["message"]


def test_a_line_over_the_body_limit_is_refused_alone_without_being_held_in_memory(tmp_path: Path) -> None:
    """A 48 MiB line is refused in the words of the HTTP API's 413, the lines after it are answered, and the
    process never holds it: its peak memory stays far below what reading the line whole takes (about ten times
    the line, once parsed and refused field by field)."""
    lines = scenario_lines()[:2]
    huge = json.dumps(
        {"workspace_id": "incident-042", "items": [{"type": "observation", "statement": "s" * (48 << 20)}]}
    )
    data = f"{lines[0]}\n{huge}\n{lines[1]}\n".encode()
    (tmp_path / "input.jsonl").write_bytes(data)
    returncode, stdout, stderr, peak_kb = caseboard_measured(
        "submit", WS, "--trust-timestamps", "--file", "input.jsonl", url=f"sqlite:///{tmp_path}/ledger.db", cwd=tmp_path
    )
    assert returncode == 1 and "Traceback" not in stderr, stderr
    outcomes = jsonl(stdout)
    assert [(o["ok"], o.get("workspace_version"), o.get("line")) for o in outcomes] == [
        (True, 1, None),
        (False, None, 2),
        (True, 2, None),
    ]
    limit = 2 * 1024 * 1024
    assert outcomes[1]["message"] == (
        f"the line is over the limit of {limit} bytes: large material lives behind evidence_ref"
    )
    assert peak_kb < 200 * 1024, f"peak memory {peak_kb} KB for a line of 48 MiB"


def test_submit_from_a_terminal_says_it_is_reading_and_how_to_end(tmp_path: Path) -> None:
    """``--file -`` at a terminal would otherwise wait in silence; from a pipe (the tests above) it says nothing."""
    import pty

    opening = scenario_lines()[0]
    assert len(opening) < 4000  # a terminal's line discipline holds at most 4,095 bytes of a line
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "caseboard", "submit", WS, "--trust-timestamps", "--file", "-"],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "CASEBOARD_DATABASE_URL": f"sqlite:///{tmp_path}/ledger.db"},
    )
    os.close(terminal)
    try:
        os.write(controller, opening.encode() + b"\n\x04")  # the line, then Ctrl-D at the start of the next
        stdout, stderr = process.communicate(timeout=60)
    finally:
        os.close(controller)
    assert process.returncode == 0, stderr
    assert stderr.decode().splitlines()[0] == (
        "caseboard: reading contributions from the terminal, a JSON object a line; Ctrl-D ends"
    )
    assert [(o["ok"], o["workspace_version"]) for o in jsonl(stdout.decode())] == [(True, 1)]


def assert_one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0
    assert "Traceback" not in done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    return done.stderr


def test_a_malformed_json_line_is_refused_invalid_with_exit_status_one(tmp_path: Path) -> None:
    file = write_lines(tmp_path / "bad.jsonl", ['{"workspace_id": "incident-042", "items": [}'])
    done = caseboard("submit", WS, "--file", file, url=f"sqlite:///{tmp_path}/ledger.db")
    assert done.returncode == 1
    [outcome] = jsonl(done.stdout)
    assert (outcome["ok"], outcome["reason"], outcome["line"]) == (False, "invalid", 1)
    refusal = json.loads(assert_one_line_error(done))  # the refusal's log event
    assert (refusal["event"], refusal["reason"]) == ("contribution_refused", "invalid")


@pytest.fixture(scope="module")
def opened_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("cli-opened")
    url = f"sqlite:///{folder}/ledger.db"
    done = caseboard("submit", WS, "--file", write_lines(folder / "1.jsonl", scenario_lines()[:1]), url=url)
    assert done.returncode == 0, done.stderr
    return url


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["submit", WS, "--file", "/nonexistent/contributions.jsonl"], "/nonexistent/contributions.jsonl"),
        (["submit", WS], "--file"),
        (["show", "incident-999"], "unknown workspace 'incident-999'"),
        (["log", "incident-999"], "unknown workspace 'incident-999'"),
        (["log", WS, "--after", "-5"], "--after -5: a version, 0 or more"),
        (["timeline", "incident-999"], "unknown workspace 'incident-999'"),
        (["show", WS, "--at-version", "99"], "version 99 does not exist"),
        (["show", WS, "--at-version", "0"], "version 0 does not exist"),
        (["show", WS, "--reducer", "nope"], "'nope'"),
        (["show", WS, "--format", "xml"], "'xml'"),
        (["show", WS, "--at-version", "twenty"], "'twenty'"),
        (["explode"], "'explode'"),
        (["outbox", "prune", "--older-than-days", "0"], "--older-than-days must be a number more than 0, not 0"),
        (["outbox", "prune", "--older-than-days", "inf"], "not inf"),  # before: Infinity in its JSON answer
        (["outbox", "prune", "--older-than-days", "a week"], "'a week'"),
    ],
)
def test_a_user_mistake_is_one_line_on_stderr_and_a_non_zero_exit(opened_url: str, args: list[str], says: str) -> None:
    done = caseboard(*args, url=opened_url)
    assert says in assert_one_line_error(done)
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mysql://root@127.0.0.1/caseboard", "CASEBOARD_DATABASE_URL"),
        ("sqlite:///", "sqlite:///path/to/ledger.db"),
        ("sqlite:////proc/caseboard/ledger.db", "/proc/caseboard/ledger.db"),
        ("postgresql://postgres@127.0.0.1:1/test", "cannot reach PostgreSQL"),
        ("postgresql://postgres@127.0.0.1:99999/test", "not a valid URL"),
        ('postgresql://postgres@127.0.0.1:5432/test?schema=a"b', "schema"),
    ],
)
def test_a_bad_database_url_is_one_line_on_stderr_and_a_non_zero_exit(url: str, says: str, tmp_path: Path) -> None:
    done = caseboard("show", WS, url=url, cwd=tmp_path)
    assert says in assert_one_line_error(done)


@pytest.mark.parametrize("command", ["show", "log", "timeline"])
def test_reading_a_postgres_schema_that_does_not_exist_yet_says_the_workspace_is_unknown(
    postgres_url: str, command: str, tmp_path: Path
) -> None:
    done = caseboard(command, WS, url=postgres_url)
    assert "unknown workspace 'incident-042'" in assert_one_line_error(done)
    first = write_lines(tmp_path / "1.jsonl", scenario_lines()[:1])
    assert caseboard("submit", WS, "--file", first, url=postgres_url).returncode == 0
    assert caseboard(command, WS, url=postgres_url).returncode == 0


def test_a_role_that_may_only_read_can_show_log_and_timeline(
    postgres_available: str, postgres_url: str, tmp_path: Path
) -> None:
    import psycopg

    first = write_lines(tmp_path / "1-3.jsonl", scenario_lines()[:3])
    assert caseboard("submit", WS, "--file", first, "--trust-timestamps", url=postgres_url).returncode == 0
    role, schema = f"reader_{uuid.uuid4().hex[:10]}", parse_qs(urlparse(postgres_url).query)["schema"][0]
    with psycopg.connect(postgres_available, autocommit=True) as conn:
        try:
            conn.execute(f'CREATE ROLE "{role}" LOGIN')
        except psycopg.errors.InsufficientPrivilege as error:
            pytest.skip(f"cannot create a role to read with: {error}")
        try:
            conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
            conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
            parts = urlparse(postgres_url)
            reader_url = urlunparse(parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port or 5432}"))
            for command in ("show", "log", "timeline"):
                done = caseboard(command, WS, url=reader_url)
                assert done.returncode == 0, done.stderr
            assert json.loads(caseboard("show", WS, url=reader_url).stdout)["workspace_version"] == 3
        finally:
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE "{role}"')


def test_reading_a_sqlite_file_in_a_folder_that_does_not_exist_yet_says_the_workspace_is_unknown(
    tmp_path: Path,
) -> None:
    done = caseboard("show", WS, url=f"sqlite:///{tmp_path}/not/yet/ledger.db")
    assert "unknown workspace 'incident-042'" in assert_one_line_error(done)


def test_four_submit_processes_fed_at_once_on_postgres_all_land_with_contiguous_versions(
    postgres_url: str, tmp_path: Path
) -> None:
    first = write_lines(tmp_path / "1.jsonl", scenario_lines()[:1])
    assert caseboard("submit", WS, "--file", first, url=postgres_url).returncode == 0
    env = {**os.environ, "CASEBOARD_DATABASE_URL": postgres_url, "CASEBOARD_LOG_LEVEL": "warning"}
    batches = [
        "".join(
            json.dumps(
                {
                    "author": {"principal": f"specialist-{p}", "role": "specialist"},
                    "items": [
                        {
                            "type": "observation",
                            "id": f"obs-{p}-{n}",
                            "statement": "auth failures on one instance",
                            "source": {"system": "auth-logs", "instance": f"payments-api-{p}"},
                            "event_time": "2026-03-02T14:03:00Z",
                            "event_time_quality": "verified",
                        }
                    ],
                }
            )
            + "\n"
            for n in range(10)
        )
        for p in range(4)
    ]
    with ExitStack() as stack:
        processes = [
            stack.enter_context(
                subprocess.Popen(
                    [sys.executable, "-m", "caseboard", "submit", WS, "--file", "-"],
                    env=env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
            )
            for _ in batches
        ]
        for process, batch in zip(processes, batches, strict=True):  # each waits on its input: fed together
            assert process.stdin is not None
            process.stdin.write(batch.encode())
        for process in processes:
            assert process.stdin is not None
            process.stdin.close()
        results = []
        for process in processes:  # stderr stays small (warnings only), so reading stdout first cannot block
            assert process.stdout is not None and process.stderr is not None
            results.append((process.stdout.read(), process.stderr.read()))
            process.wait(timeout=120)
    assert [process.returncode for process in processes] == [0] * 4, [err.decode() for _, err in results]
    versions = sorted(o["workspace_version"] for out, _ in results for o in jsonl(out.decode()))
    assert versions == list(range(2, 42))
    logged = jsonl(caseboard("log", WS, url=postgres_url).stdout)
    assert [c["workspace_version"] for c in logged] == list(range(1, 42))


def test_help_lists_the_commands(tmp_path: Path) -> None:
    done = caseboard("--help", url="sqlite:///unused.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for command in ("submit", "show", "log", "timeline"):
        assert command in done.stdout
    show = caseboard("show", "--help", url="sqlite:///unused.db", cwd=tmp_path)
    assert show.returncode == 0
    assert "--at-version" in show.stdout and "--reducer" in show.stdout and "--format" in show.stdout
