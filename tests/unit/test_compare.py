"""compare: where two reducers disagree over recorded incidents, as a table or JSON, exit codes as diff(1)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from caseboard.cli.main import main
from caseboard.replay.compare import compare
from caseboard.replay.progress import ProgressBar

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"
INCIDENTS = sorted(CORPUS.glob("*.jsonl"))
VERSIONS = sum(1 for path in INCIDENTS for line in path.read_text().splitlines() if line.strip())
V1, V2 = "workspace-rules-v1", "workspace-rules-v2"


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> Iterator[None]:
    """The CLI logs to the stream of the moment (a capture); later tests must not write there."""
    yield
    structlog.reset_defaults()


def test_a_reducer_compared_with_itself_agrees_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--reducer", V1, "--reducer", V1, str(CORPUS)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{len(INCIDENTS)} incidents, {VERSIONS} versions: the reducers agree")


def test_v1_and_v2_differ_exactly_where_their_semantics_do() -> None:
    result = compare([str(CORPUS)], V1, V2)
    assert not result.agree
    assert [(d.incident, d.version, d.aspect, d.item, d.a, d.b) for d in result.differences] == [
        ("expired-evidence-044", 8, "proposal_status", "proposal-001", "requires_revalidation", "current"),
        ("expired-evidence-044", 9, "proposal_status", "proposal-001", "requires_revalidation", "current"),
        ("scope-change-051", 5, "proposal_status", "proposal-001", "requires_revalidation", "current"),
        ("stale-proposal-066", 10, "proposal_status", "proposal-004", "requires_revalidation", "accepted"),
    ]


def test_the_table_names_incident_version_aspect_item_and_both_values(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compare", "--reducer", V1, "--reducer", V2, str(CORPUS / "scope-change-051.jsonl")]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["INCIDENT", "VERSION", "ASPECT", "ITEM", V1, V2]
    assert out[1].split() == [
        "scope-change-051",
        "5",
        "proposal_status",
        "proposal-001",
        "requires_revalidation",
        "current",
    ]
    assert out[-1] == "1 incident, 9 versions: 1 difference"


def test_json_output_carries_every_difference(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--reducer", V1, "--reducer", V2, "--format", "json", str(CORPUS)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["reducers"] == [V1, V2]
    assert (report["incidents"], report["versions"], report["agree"]) == (len(INCIDENTS), VERSIONS, False)
    assert {d["incident"] for d in report["differences"]} == {
        "expired-evidence-044",
        "scope-change-051",
        "stale-proposal-066",
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--reducer", V1, str(CORPUS)], "exactly two --reducer"),
        (["--reducer", V1, "--reducer", V2, "no/such/path"], "no/such/path: no such file or directory"),
        (["--reducer", V1, "--reducer", "workspace-rules-v9", str(CORPUS)], "unknown reducer 'workspace-rules-v9'"),
    ],
)
def test_a_mistake_is_one_line_and_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["compare", *argv])
    except SystemExit as exit:
        code = int(str(exit.code))
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.count("\n") == 1


def test_the_progress_bar_draws_only_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal, pipe = Tty(), io.StringIO()
    compare([str(CORPUS)], V1, V2, ProgressBar(terminal))
    compare([str(CORPUS)], V1, V2, ProgressBar(pipe))
    drawn = terminal.getvalue().removesuffix("\x1b[?25h")  # rich shows the cursor again once the bar ends
    assert f"{len(INCIDENTS)}/{len(INCIDENTS)}" in drawn and drawn.endswith("\n")
    assert pipe.getvalue() == ""
