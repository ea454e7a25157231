"""export and import on SQLite and PostgreSQL: byte-identical round trips, --as re-sealing, refusals."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from caseboard.cli.main import main
from caseboard.coordinator import Coordinator
from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.replay.rebuild import replay_file, replay_ledger
from caseboard.replay.transfer import ImportRefused, export, import_file
from caseboard.replay.verify import verify_ledger
from tests.conftest import play, scenario_lines

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> Iterator[None]:
    """The CLI logs to the stream of the moment (a capture); later tests must not write there."""
    yield
    structlog.reset_defaults()


@pytest.fixture
def target(durable_url: str) -> EventsourcingLedger:
    ledger = open_ledger(durable_url)
    yield ledger  # type: ignore[misc]
    ledger.close()


def exported(ledger: EventsourcingLedger, workspace_id: str) -> str:
    out = io.StringIO()
    export(ledger, workspace_id, out)
    return out.getvalue()


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.jsonl")), ids=lambda p: p.stem)
def test_import_then_export_gives_back_the_same_bytes(target: EventsourcingLedger, path: Path) -> None:
    done = import_file(target, path)
    assert exported(target, done.workspace_id) == path.read_text()
    assert verify_ledger(target, done.workspace_id).intact
    assert done.head_hash == done.source_head_hash and not done.resealed


def test_import_as_another_workspace_reseals_a_chain_that_verifies(target: EventsourcingLedger) -> None:
    path = CORPUS / "incident-042.jsonl"
    done = import_file(target, path, "incident-042-copy")
    report = verify_ledger(target, "incident-042-copy")
    assert report.intact and report.head_hash == done.head_hash
    assert done.resealed and done.head_hash != done.source_head_hash
    for version in (1, 18, 19, 20):
        renamed = replay_ledger(target, "incident-042-copy", version)
        original = replay_file(path, version)
        assert renamed == {**original, "workspace_id": "incident-042-copy"}


def test_import_refuses_an_existing_workspace_and_changes_nothing(target: EventsourcingLedger) -> None:
    path = CORPUS / "scope-change-051.jsonl"
    import_file(target, path)
    with pytest.raises(ImportRefused, match="already exists"):
        import_file(target, path)
    assert target.head("scope-change-051") == 9


def test_import_with_an_anchor_refuses_a_file_cut_before_it_and_takes_one_that_holds_it(
    target: EventsourcingLedger, tmp_path: Path
) -> None:
    lines = (CORPUS / "incident-042.jsonl").read_text().splitlines()
    head = json.loads(lines[-1])["hash"]
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-2]) + "\n")
    with pytest.raises(ImportRefused, match="version 18 is anchor_missing"):  # the last version the file holds
        import_file(target, cut, anchor=head)
    assert target.head("incident-042") == 0
    assert import_file(target, CORPUS / "incident-042.jsonl", anchor=head).commits == 20


def test_import_refuses_a_tampered_file_naming_the_version_and_writes_nothing(
    target: EventsourcingLedger, tmp_path: Path
) -> None:
    lines = (CORPUS / "incident-042.jsonl").read_text().splitlines()
    lines[13] = lines[13].replace('"cycles_left":4', '"cycles_left":40')
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportRefused, match="version 14 is altered"):
        import_file(target, tampered)
    with pytest.raises(ImportRefused, match="version 14 is altered"):
        import_file(target, tampered, "somewhere-else")
    assert target.head("incident-042") == 0 and target.head("somewhere-else") == 0


@pytest.mark.parametrize(
    ("edit", "kind"),
    [
        (lambda lines: [*lines[:5], lines[5] + "\r", *lines[6:]], "altered"),  # a trailing carriage return
        (lambda lines: [*lines[:5], "", *lines[5:]], "unreadable"),  # an inserted blank line
        (lambda lines: [*lines[:5], "   ", *lines[5:]], "unreadable"),
        (lambda lines: [*lines, ""], "unreadable"),  # a blank line at the end
    ],
    ids=["carriage-return", "blank-line", "spaces-line", "blank-last-line"],
)
def test_verify_and_import_refuse_any_line_that_is_not_exactly_a_sealed_commit(
    target: EventsourcingLedger, tmp_path: Path, edit: Any, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 34, item 8: such lines were skipped or trimmed, so the file passed verify and import."""
    lines = (CORPUS / "incident-042.jsonl").read_text().splitlines()
    edited = tmp_path / "edited.jsonl"
    edited.write_bytes(("\n".join(edit(lines)) + "\n").encode())
    assert main(["verify", str(edited), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["intact"], report["kind"]) == (False, kind), report
    with pytest.raises(ImportRefused):
        import_file(target, edited)
    assert target.head("incident-042") == 0


def test_cli_export_and_import_round_trip_between_two_ledgers(
    durable_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CASEBOARD_LOG_LEVEL", "warning")
    assert main(["--database-url", durable_url, "import", str(CORPUS / "late-arrival-017.jsonl")]) == 0
    assert '"commits":8' in capsys.readouterr().out
    out = tmp_path / "out.jsonl"
    assert main(["--database-url", durable_url, "export", "late-arrival-017", "--out", str(out)]) == 0
    assert out.read_text() == (CORPUS / "late-arrival-017.jsonl").read_text()
    assert main(["--database-url", durable_url, "export", "no-such-workspace", "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "unknown workspace 'no-such-workspace'" in capsys.readouterr().err
    assert not (tmp_path / "x.jsonl").exists()
    for bad in ("bad id!", "a/b", "../b"):  # no workspace id holds a '/', as the refusal says
        assert main(["--database-url", durable_url, "import", str(out), "--as", bad]) == 2
        assert capsys.readouterr().err == (
            f"caseboard: --as {bad!r}: a workspace id is letters, digits and . _ : @ - (no '/'), at most 128\n"
        )


def test_an_import_that_collides_with_a_concurrent_writer_writes_nothing(tmp_path: Path, ledger_url: str) -> None:
    """All commits of an import land in one transaction: a taken version rolls every one of them back."""
    from caseboard.ledger import VersionTaken

    source = open_ledger("memory://")
    play(Coordinator(source, trust_timestamps=True), scenario_lines())
    commits = source.read("incident-042")
    target = open_ledger(ledger_url)
    try:
        target.append(commits[4])  # another writer got version 5 first
        with pytest.raises(VersionTaken):
            target.append_many(commits)
        assert [c.version for c in target.read("incident-042")] == [5]
    finally:
        target.close()
