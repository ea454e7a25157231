"""verify of a large file in segments, one process each (docs/adr/0182): an intact chain is reported as one pass
reports it, and any tampering, wherever it falls against the segments' ends, is named exactly as one pass
names it.

The files here are small: ``PARALLEL_MIN_BYTES`` is lowered so that they are cut into segments, and each
check forks real processes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caseboard.cli.main import main
from caseboard.domain.commit import Commit
from caseboard.replay import verify
from caseboard.replay.verify import verify_file

ROOT = Path(__file__).resolve().parents[2]
INCIDENT = ROOT / "corpus" / "incident-042.jsonl"
OTHER = ROOT / "corpus" / "late-arrival-017.jsonl"


@pytest.fixture(autouse=True)
def _segments_for_small_files(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(verify, "PARALLEL_MIN_BYTES", 0)
    yield
    structlog.reset_defaults()  # the CLI logs to the stream of the moment (a capture)


def lines() -> list[str]:
    return INCIDENT.read_text().splitlines()


def write(folder: Path, content: list[str], name: str = "incident.jsonl") -> Path:
    path = folder / name
    path.write_text("\n".join(content) + "\n")
    return path


def first_lines(path: Path, jobs: int) -> list[int]:
    """The index of the first line of each segment after the first."""
    text = path.read_bytes()
    return [text[:start].count(b"\n") for start, _ in verify._segments(path, jobs)[1:]]


def resealed(line: str, **changes: object) -> str:
    """``line`` edited and sealed again: intact in itself, so only the next link (or the join) can catch it."""
    commit = Commit.model_validate_json(line)
    return commit.model_copy(update={**changes, "hash": None}).sealed().model_dump_json(exclude_none=True)


def both(path: Path, jobs: int, anchor: str | None = None) -> dict[str, object]:
    """The report of ``jobs`` segments, checked to be the one pass's."""
    parallel = verify_file(path, anchor, jobs=jobs).to_dict()
    assert parallel == verify_file(path, anchor, jobs=1).to_dict()
    return parallel


def test_an_intact_file_is_checked_in_segments_and_reported_as_one_pass_reports_it(tmp_path: Path) -> None:
    for jobs in (2, 3, 7):
        segments = verify._segments(INCIDENT, jobs)
        assert len(segments) == jobs and segments[0][0] == 0 and segments[-1][1] == INCIDENT.stat().st_size
        joined = verify._joined(INCIDENT, segments, None)
        assert joined is not None and joined.to_dict() == verify_file(INCIDENT, jobs=1).to_dict()
        assert (joined.commits, joined.head_hash) == (20, json.loads(lines()[-1])["hash"])
    head = json.loads(lines()[-1])["hash"]
    joined = verify._joined(INCIDENT, verify._segments(INCIDENT, 3), head)
    assert joined is not None and joined.anchored_version == 20


def test_a_file_is_cut_into_at_most_max_jobs_segments(tmp_path: Path) -> None:
    # The file is cut with a seek for each number up to jobs: 10**20 of them would never return.
    many = write(tmp_path, [f"line {n}" for n in range(2 * verify.MAX_JOBS)])
    assert len(verify._segments(many, 10**4)) == verify.MAX_JOBS
    assert len(verify._segments(INCIDENT, 10**4)) == len(lines())  # fewer lines: one segment a line


def test_a_small_file_or_one_job_is_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    assert verify._segments(INCIDENT, 1) == []
    monkeypatch.setattr(verify, "PARALLEL_MIN_BYTES", INCIDENT.stat().st_size + 1)
    assert verify._segments(INCIDENT, 4) == []
    assert verify._segments(Path("/nonexistent/incident.jsonl"), 4) == []


def test_an_edit_at_a_segment_s_first_line_is_altered_at_its_version(tmp_path: Path) -> None:
    path = write(tmp_path, lines())
    at = first_lines(path, 3)[1]
    content = lines()
    content[at] = content[at].replace('"version":', '"version": ', 1)
    path = write(tmp_path, content)
    assert at in first_lines(path, 3)
    assert verify._joined(path, verify._segments(path, 3), None) is None
    assert (both(path, 3)["first_bad_version"], both(path, 3)["kind"]) == (at + 1, "altered")


def test_a_line_resealed_at_a_segment_s_end_is_caught_by_the_join(tmp_path: Path) -> None:
    """The last line of a segment edited and re-sealed: every segment is intact in itself; only the join,
    the next segment's first ``previous_hash``, shows it."""
    at = first_lines(write(tmp_path, lines()), 3)[0] - 1
    content = lines()
    content[at] = resealed(content[at], at=Commit.model_validate_json(content[at]).at.replace(second=59))
    path = write(tmp_path, content)
    segments = verify._segments(path, 3)
    assert all(verify._check_segment(str(path), start, end, None) is not None for start, end in segments)
    assert verify._joined(path, segments, None) is None
    report = both(path, 3)
    assert (report["first_bad_version"], report["kind"]) == (at + 1, "broken_link")


def test_a_deleted_or_misplaced_line_at_a_segment_s_end_is_named_as_one_pass_names_it(tmp_path: Path) -> None:
    at = first_lines(write(tmp_path, lines()), 2)[0]
    deleted = lines()
    del deleted[at]
    assert both(write(tmp_path, deleted, "deleted.jsonl"), 2)["kind"] == "missing"
    swapped = lines()
    swapped[at - 1], swapped[at] = swapped[at], swapped[at - 1]
    report = both(write(tmp_path, swapped, "swapped.jsonl"), 2)
    assert (report["first_bad_version"], report["kind"]) == (at, "out_of_order")


def test_another_workspace_s_chain_after_a_segment_s_end_is_foreign(tmp_path: Path) -> None:
    """Two chains, each intact, one after the other: each segment holds, and the join refuses the second."""
    path = write(tmp_path, lines() + OTHER.read_text().splitlines())
    report = both(path, 2)
    assert (report["first_bad_version"], report["kind"]) == (21, "foreign")


def test_an_anchor_a_blank_line_and_a_cut_off_end(tmp_path: Path) -> None:
    head = json.loads(lines()[-1])["hash"]
    cut = write(tmp_path, lines()[:-1], "cut.jsonl")
    assert both(cut, 3)["intact"] is True
    assert (both(cut, 3, head)["kind"], both(cut, 3, head)["first_bad_version"]) == ("anchor_missing", 19)
    at = first_lines(write(tmp_path, lines()), 3)[1]
    blank = lines()
    blank.insert(at, "")
    report = both(write(tmp_path, blank, "blank.jsonl"), 3)
    assert (report["first_bad_version"], report["kind"]) == (at + 1, "unreadable")


TAMPERS = ("edit", "reseal", "delete", "swap", "blank", "duplicate")


def tampered(tamper: str, at: int) -> list[str]:
    """incident-042's lines with one of ``TAMPERS`` done at line ``at`` (0-18)."""
    content = lines()
    if tamper == "edit":
        content[at] = content[at].replace('"hash":"', '"hash":"0', 1)[:-3] + '"}'
    elif tamper == "reseal":
        content[at] = resealed(content[at], at=Commit.model_validate_json(content[at]).at.replace(second=59))
    elif tamper == "delete":
        del content[at]
    elif tamper == "swap":
        content[at], content[at + 1] = content[at + 1], content[at]
    elif tamper == "blank":
        content.insert(at, "")
    else:
        content.insert(at, content[at])
    return content


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tamper=st.sampled_from(TAMPERS), at=st.integers(0, 18), jobs=st.integers(2, 6))
def test_any_single_tampering_is_reported_in_segments_as_one_pass_reports_it(
    tmp_path_factory: pytest.TempPathFactory, tamper: str, at: int, jobs: int
) -> None:
    report = both(write(tmp_path_factory.mktemp("tampered"), tampered(tamper, at)), jobs)
    assert report["intact"] is False


def test_cli_verify_takes_a_number_of_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    content = lines()
    content[12] = content[12].replace('"version":', '"version": ', 1)
    tampered = str(write(tmp_path, content))
    assert main(["verify", tampered, "--jobs", "3", "--format", "json"]) == 1
    in_segments = json.loads(capsys.readouterr().out)
    assert main(["verify", tampered, "--jobs", "1", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out) == in_segments
    assert (in_segments["first_bad_version"], in_segments["kind"]) == (13, "altered")
    for wrong in ("0", "-2", "two", "257", "99999999999999999999"):
        with pytest.raises(SystemExit) as exit_info:
            main(["verify", tampered, "--jobs", wrong])
        assert exit_info.value.code == 2
        error = capsys.readouterr().err
        assert "is not a number of processes" in error and "Traceback" not in error
