"""verify over recorded incident files: each kind of tampering is caught at the first bad version."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from caseboard.cli.main import main
from caseboard.domain.commit import Commit
from caseboard.replay.verify import verify_file

ROOT = Path(__file__).resolve().parents[2]
INCIDENT = ROOT / "corpus" / "incident-042.jsonl"


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> Iterator[None]:
    """The CLI logs to the stream of the moment (a capture); later tests must not write there."""
    yield
    structlog.reset_defaults()


def lines() -> list[str]:
    return INCIDENT.read_text().splitlines()


def write(tmp_path: Path, content: list[str]) -> Path:
    path = tmp_path / "incident.jsonl"
    path.write_text("\n".join(content) + "\n")
    return path


def edited(line: str, **changes: object) -> str:
    data = json.loads(line)
    data.update(changes)
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)  # the stored form: only ``changes`` differ


def test_every_corpus_incident_is_intact() -> None:
    for path in sorted((ROOT / "corpus").glob("*.jsonl")):
        report = verify_file(path)
        assert report.intact, report.line()
        assert report.head_hash == json.loads(path.read_text().splitlines()[-1])["hash"]


def test_an_edited_line_is_reported_as_altered_at_its_version(tmp_path: Path) -> None:
    content = lines()
    content[9] = content[9].replace("No latency or saturation anomaly", "Latency anomaly")
    report = verify_file(write(tmp_path, content))
    assert report.problem is not None
    assert (report.problem.version, report.problem.kind) == (10, "altered")


def test_an_edited_and_resealed_line_is_caught_by_the_next_link(tmp_path: Path) -> None:
    content = lines()
    commit = Commit.model_validate_json(content[9])
    forged = commit.model_copy(update={"at": commit.at.replace(second=59), "hash": None}).sealed()
    content[9] = forged.model_dump_json(exclude_none=True)
    report = verify_file(write(tmp_path, content))
    assert report.problem is not None
    assert (report.problem.version, report.problem.kind) == (10, "broken_link")


def test_a_deleted_line_is_reported_as_the_missing_version(tmp_path: Path) -> None:
    content = lines()
    del content[6]
    report = verify_file(write(tmp_path, content))
    assert report.problem is not None
    assert (report.problem.version, report.problem.kind) == (7, "missing")


def test_reordered_lines_are_reported_at_the_first_misplaced_version(tmp_path: Path) -> None:
    content = lines()
    content[11], content[12] = content[12], content[11]
    report = verify_file(write(tmp_path, content))
    assert report.problem is not None
    assert (report.problem.version, report.problem.kind) == (12, "out_of_order")


def test_a_renumbered_line_is_altered_even_when_the_order_looks_right(tmp_path: Path) -> None:
    content = lines()
    content[3] = edited(content[3], version=4)
    content[4] = edited(content[4], version=4)
    report = verify_file(write(tmp_path, content))
    assert report.problem is not None
    assert report.problem.version == 5


def test_an_unreadable_line_is_reported_with_its_place(tmp_path: Path) -> None:
    content = lines()
    content[2] = content[2][:40]
    report = verify_file(write(tmp_path, content))
    assert report.problem is not None
    assert (report.problem.version, report.problem.kind) == (3, "unreadable")


def test_cli_verify_exits_1_on_tampering_and_prints_json_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", str(INCIDENT)]) == 0
    assert "intact, 20 commits of incident-042" in capsys.readouterr().out
    content = lines()
    del content[-1]
    content[0] = content[0].replace("tenant-a", "tenant-b")
    assert main(["verify", str(write(tmp_path, content)), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["intact"], report["first_bad_version"], report["kind"]) == (False, 1, "altered")


def resealed_from(content: list[str], version: int, summary: str) -> list[str]:
    """An edit at ``version`` re-sealed through to the end: a chain intact in itself."""
    out = content[: version - 1]
    previous = json.loads(out[-1])["hash"]
    for line in content[version - 1 :]:
        commit = Commit.model_validate_json(line)
        if commit.version == version:
            item = commit.items[0].model_copy(update={"summary": summary})
            commit = commit.model_copy(update={"items": (item, *commit.items[1:])})
        commit = commit.model_copy(update={"previous_hash": previous}).sealed()
        out.append(commit.stored_json.decode())
        previous = commit.hash
    return out


def test_an_anchor_proves_the_chain_up_to_it_and_a_later_head_is_fine(tmp_path: Path) -> None:
    content = lines()
    head = json.loads(content[-1])["hash"]
    fifth = json.loads(content[4])["hash"]
    assert verify_file(INCIDENT, anchor=head).anchored_version == 20
    report = verify_file(INCIDENT, anchor=fifth)  # the chain grew after the anchor was kept: still intact
    assert (report.intact, report.anchored_version) == (True, 5)
    assert "anchor found at version 5" in report.line()


def test_a_cut_off_end_is_caught_by_the_anchor_alone(tmp_path: Path) -> None:
    content = lines()
    head = json.loads(content[-1])["hash"]
    cut = write(tmp_path, content[:-1])
    assert verify_file(cut).intact  # without an anchor, a chain cut at its end looks whole
    report = verify_file(cut, anchor=head)
    assert report.problem is not None
    assert (report.problem.version, report.problem.kind) == (19, "anchor_missing")  # the last version it holds


def test_an_end_resealed_after_an_edit_is_caught_by_the_anchor(tmp_path: Path) -> None:
    content = lines()
    assert json.loads(content[9])["items"][0]["type"] == "work_result"
    head = json.loads(content[-1])["hash"]
    forged = write(tmp_path, resealed_from(content, 10, "Latency anomaly on payments-api-3"))
    assert "Latency anomaly" in forged.read_text()
    assert verify_file(forged).intact
    report = verify_file(forged, anchor=head)
    assert report.problem is not None and report.problem.kind == "anchor_missing"


def test_cli_verify_with_an_anchor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    content = lines()
    head = json.loads(content[-1])["hash"]
    assert main(["verify", str(write(tmp_path, content[:-1])), "--anchor", head, "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["intact"], report["kind"], report["commits"]) == (False, "anchor_missing", 19)
    with pytest.raises(SystemExit) as exit_info:
        main(["verify", str(INCIDENT), "--anchor", "not-a-hash"])
    assert exit_info.value.code == 2
    assert "not a head hash" in capsys.readouterr().err
