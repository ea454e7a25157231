"""export --with-excerpts writes the cited excerpts beside the commits; verify catches a tampered one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.unit.board import obs, open_item

LOG = b"".join(b"14:%02d auth_failure payments-api-%d\n" % (m, m % 3) for m in range(30))


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The command line in a process of its own (its logging set up there, not in this one)."""
    done = subprocess.run([sys.executable, "-m", "caseboard", *argv], capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def cited_workspace(tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str) -> str:
    (tmp_path / "auth.log").write_bytes(LOG)
    code, out, _ = cli(capsys, "--database-url", url, "artifacts", "put", str(tmp_path / "auth.log"))
    assert code == 0
    aid = str(json.loads(out)["artifact_id"])
    lines = [
        {"workspace_id": "ws-1", "author": {"principal": "op", "role": "operator"}, "items": [open_item()]},
        {
            "workspace_id": "ws-1",
            "author": {"principal": "log-specialist", "role": "specialist"},
            "items": [obs("obs-1", evidence_ref={"artifact": aid, "lines": [5, 7]})],
        },
    ]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert cli(capsys, "--database-url", url, "submit", "ws-1", "--file", str(tmp_path / "in.jsonl"))[0] == 0
    return aid


def exported_with_excerpts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """The cited workspace exported with ``--with-excerpts``: the export and its sidecar."""
    url = f"sqlite:///{tmp_path}/ledger.db"
    cited_workspace(tmp_path, capsys, url)
    export = tmp_path / "ws-1.jsonl"
    assert cli(capsys, "--database-url", url, "export", "ws-1", "--out", str(export), "--with-excerpts")[0] == 0
    return export, tmp_path / "ws-1.jsonl.excerpts.jsonl"


def test_a_tampered_excerpt_beside_an_export_is_caught_by_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export, sidecar = exported_with_excerpts(tmp_path, capsys)
    record = json.loads(sidecar.read_text())
    assert record["text"] == b"".join(LOG.splitlines(keepends=True)[4:7]).decode()
    assert cli(capsys, "verify", str(export), "--format", "json")[0] == 0
    record["text"] = record["text"].replace("auth_failure", "auth_success", 1)
    sidecar.write_text(json.dumps(record) + "\n")
    code, out, _ = cli(capsys, "verify", str(export), "--format", "json")
    report = json.loads(out)
    assert (code, report["intact"], report["kind"], report["first_bad_version"]) == (1, False, "excerpt_mismatch", 2)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b"not json\n", "Expecting value: line 1 column 1 (char 0)"),
        (b"[1]\n", "not a JSON object"),
        (b'{"item": 0}\n', "no 'version'"),
        (b'{"version": "x", "item": 0}\n', "version and item are integers"),
        (b'{"version": 2, "item": 0, "text": 7}\n', "text is a string"),
        (b'{"version": 2, "item": 0, "base64": "@@"}\n', "Only base64 data is allowed"),
        (b"\xff\n", "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"),
        (b'{"version": 2, "item": 0, "text": "' + b"x" * (9 << 20) + b'"}\n', "longer than 8388608 bytes; not read"),
    ],
)
def test_a_sidecar_line_that_is_no_excerpt_is_one_line_naming_it_for_verify_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: bytes, problem: str
) -> None:
    export, sidecar = exported_with_excerpts(tmp_path, capsys)
    sidecar.write_bytes(sidecar.read_bytes() + line)
    for command in (["verify", str(export)], ["report", str(export), "--out", str(tmp_path / "report.html")]):
        code, out, err = cli(capsys, *command)
        assert (code, out) == (2, ""), err
        assert err == f"caseboard: {sidecar}:2: not an excerpt record ({problem})\n"


def test_a_tampered_stored_artifact_is_caught_by_verify_of_the_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    aid = cited_workspace(tmp_path, capsys, url)
    assert cli(capsys, "--database-url", url, "verify", "ws-1")[0] == 0
    hexdigest = aid.removeprefix("sha256:")
    blob = tmp_path / "artifacts" / "tenant-a" / hexdigest[:2] / hexdigest
    blob.write_bytes(LOG.replace(b"14:05", b"14:55"))
    code, out, _ = cli(capsys, "--database-url", url, "verify", "ws-1")
    assert code == 1 and "excerpt_mismatch" in out and "the artifact store" in out


@pytest.mark.postgres
def test_a_tampered_artifact_row_in_postgresql_is_caught_by_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], postgres_url: str
) -> None:
    cited_workspace(tmp_path, capsys, postgres_url)
    assert cli(capsys, "--database-url", postgres_url, "verify", "ws-1")[0] == 0
    base, _, query = postgres_url.partition("?")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(
            f'UPDATE "{query.removeprefix("schema=")}".caseboard_artifact_blocks'
            " SET data = overlay(data placing 'X'::bytea from 160)"
        )
    code, out, _ = cli(capsys, "--database-url", postgres_url, "verify", "ws-1")
    assert code == 1 and "excerpt_mismatch" in out
