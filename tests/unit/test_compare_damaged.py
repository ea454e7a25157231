"""compare on damaged or empty recorded incidents: one line naming the file, exit 2, never a traceback."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from caseboard.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"
V1, V2 = "workspace-rules-v1", "workspace-rules-v2"
INCIDENT = "scope-change-051.jsonl"


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> Iterator[None]:
    yield
    structlog.reset_defaults()


def damaged(folder: Path, how: str) -> Path:
    lines = (CORPUS / INCIDENT).read_text().splitlines(keepends=True)
    if how == "line deleted":
        del lines[4]
    else:
        lines[4], lines[5] = lines[5], lines[4]
    path = folder / INCIDENT
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("how", ["line deleted", "two lines swapped"])
def test_a_damaged_file_is_one_line_naming_it_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    path = damaged(tmp_path, how)
    assert main(["compare", "--reducer", V1, "--reducer", V2, str(path)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert str(path) in lines[0]
    assert "damaged" in lines[0]
    assert "Traceback" not in captured.err
    assert "reducers agree" not in captured.out


def test_a_damaged_file_among_many_in_a_directory_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for path in CORPUS.glob("*.jsonl"):
        shutil.copy(path, tmp_path / path.name)
    bad = damaged(tmp_path, "line deleted")
    assert main(["compare", "--reducer", V1, "--reducer", V2, str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert str(bad) in err[-1]


def test_an_empty_file_is_an_error_not_an_agreement(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["compare", "--reducer", V1, "--reducer", V1, str(empty)]) == 2
    captured = capsys.readouterr()
    assert "reducers agree" not in captured.out
    assert f"{empty} holds no commits" in captured.err


def test_the_summary_says_one_incident_and_one_difference_in_the_singular(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--reducer", V1, "--reducer", V2, str(CORPUS / INCIDENT)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "1 incident, 9 versions: 1 difference"
    assert main(["compare", "--reducer", V1, "--reducer", V1, str(CORPUS / INCIDENT)]) == 0
    assert capsys.readouterr().out.strip() == "1 incident, 9 versions: the reducers agree"
