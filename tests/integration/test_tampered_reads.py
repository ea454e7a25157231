"""A commit that does not match its own hash is never folded silently: replay, show and GET refuse it, naming
the first bad version (docs/adr/0050-reads-check-the-chain.md)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from caseboard.cli.main import main
from caseboard.ledger import open_ledger
from caseboard.replay.transfer import import_file
from tests.http_server import running_server

INCIDENT = Path(__file__).resolve().parents[2] / "corpus" / "incident-042.jsonl"
ORIGINAL, EDITED = b"Authentication failures", b"Nothing unusual"


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> Iterator[None]:
    yield
    structlog.reset_defaults()


def tampered_line_16(tmp_path: Path) -> Path:
    lines = INCIDENT.read_bytes().splitlines(keepends=True)
    assert ORIGINAL in lines[15]
    lines[15] = lines[15].replace(ORIGINAL, EDITED)
    path = tmp_path / "incident-042.jsonl"
    path.write_bytes(b"".join(lines))
    return path


def imported(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/ledger.db"
    ledger = open_ledger(url)
    import_file(ledger, INCIDENT)
    ledger.close()
    return url


def update_row_16(url: str) -> None:
    """What an UPDATE made directly to the row does, behind the ledger's back."""
    with sqlite3.connect(url[len("sqlite:///") :]) as conn:
        (state,) = conn.execute("SELECT state FROM caseboard_commits WHERE originator_version = 16").fetchone()
        assert ORIGINAL in bytes(state)
        conn.execute(
            "UPDATE caseboard_commits SET state = ? WHERE originator_version = 16",
            (bytes(state).replace(ORIGINAL, EDITED),),
        )


def test_replay_of_an_edited_file_is_refused_naming_the_first_bad_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tampered_line_16(tmp_path)
    assert main(["replay", str(path), "--to", "19"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.strip().splitlines()
    assert "version 16 (altered)" in line


def test_replay_with_no_verify_folds_an_edited_file_and_warns_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tampered_line_16(tmp_path)
    assert main(["replay", str(path), "--to", "19", "--no-verify"]) == 0
    captured = capsys.readouterr()
    assert EDITED.decode() in captured.out
    assert "warning: --no-verify" in captured.err


def test_replay_before_the_edited_version_is_served(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tampered_line_16(tmp_path)
    assert main(["replay", str(path), "--to", "15"]) == 0
    assert '"workspace_version": 15' in capsys.readouterr().out


def test_replay_of_an_updated_ledger_row_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = imported(tmp_path)
    update_row_16(url)
    assert main(["--database-url", url, "replay", "incident-042"]) == 1
    assert "version 16 (altered)" in capsys.readouterr().err


def test_show_at_a_version_over_an_updated_row_refuses_with_the_version_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = imported(tmp_path)
    update_row_16(url)
    assert main(["--database-url", url, "show", "incident-042", "--at-version", "20"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.strip().splitlines()
    assert "not intact at version 16 (altered)" in line
    assert main(["--database-url", url, "show", "incident-042", "--at-version", "15"]) == 0
    assert main(["--database-url", url, "timeline", "incident-042"]) == 1


def test_get_workspace_over_an_updated_row_answers_409_tampered_with_the_version(tmp_path: Path) -> None:
    url = imported(tmp_path)
    with running_server(url) as server:
        reader = server.as_("auditor", "operator")
        before = reader.get("/workspaces/incident-042", params={"version": 20})
        assert before.status_code == 200
        update_row_16(url)
        for params in ({"version": 20}, {"version": 16}, {"version": 18, "reducer": "workspace-rules-v2"}):
            response = reader.get("/workspaces/incident-042", params=params)
            assert response.status_code == 409, response.text
            body = response.json()
            assert (body["ok"], body["reason"], body["first_bad_version"], body["kind"]) == (
                False,
                "tampered",
                16,
                "altered",
            )
        assert reader.get("/workspaces/incident-042", params={"version": 15}).status_code == 200
        head = reader.get("/workspaces/incident-042")  # its rows were never checked by this process
        assert head.status_code == 409
        assert EDITED.decode() not in head.text


def test_a_server_started_over_an_updated_row_refuses_its_head(tmp_path: Path) -> None:
    url = imported(tmp_path)
    update_row_16(url)
    with running_server(url) as server:
        reader = server.as_("auditor", "operator")
        response = reader.get("/workspaces/incident-042")
        assert response.status_code == 409
        assert response.json()["first_bad_version"] == 16
        assert reader.get("/workspaces/incident-042/timeline").status_code == 409


OLD = Path(__file__).resolve().parents[1] / "fixtures" / "incident-042.schema0.jsonl"


def test_a_file_written_before_the_chain_replays_unchecked_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(OLD), "--to", "19"]) == 0
    captured = capsys.readouterr()
    assert '"workspace_version": 19' in captured.out
    assert "chain_absent" in captured.err


def test_a_sealed_file_with_one_line_in_the_old_shape_is_refused(tmp_path: Path) -> None:
    lines = INCIDENT.read_text().splitlines(keepends=True)
    lines[3] = OLD.read_text().splitlines(keepends=True)[3]  # an unsealed record where a sealed one belongs
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(lines))
    assert main(["replay", str(path)]) == 1
