"""Golden ``caseboard diff`` and ``caseboard explain`` outputs over every recorded incident of the corpus.

Each ``tests/golden/auditor/NAME.*`` pins, through the command line: ``diff --from 1 --to HEAD`` (text and
JSON), ``diff`` of the last two versions (text) and ``explain`` of every proposal and hypothesis (text and
JSON). Any difference fails. After an intended change, regenerate and review the diff:

    CASEBOARD_UPDATE_GOLDEN=1 .venv/bin/pytest -q tests/golden/test_auditor.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from caseboard.cli.main import main
from caseboard.reducers import get_reducer
from caseboard.replay.records import read_file
from tests.conftest import caseboard

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "auditor"
INCIDENTS = sorted((ROOT / "corpus").glob("*.jsonl"))


def run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The command line in this process (the file is named relative to the repository, as a user would)."""
    capsys.readouterr()
    old = Path.cwd()
    os.chdir(ROOT)
    try:
        status = main(list(args))
    finally:
        os.chdir(old)
    out, err = capsys.readouterr()
    assert status == 0, err
    return out


def items_of(path: Path) -> list[str]:
    reducer = get_reducer()
    state = reducer.fold(reducer.initial(path.stem), read_file(path))
    return sorted([*state.proposals, *state.hypotheses])


def outputs(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, str]:
    name = f"corpus/{path.name}"
    head = sum(1 for line in path.read_text().splitlines() if line.strip())
    out = {
        "diff.txt": run(capsys, "diff", name, "--from", "1", "--to", str(head)),
        "diff.json": run(capsys, "diff", name, "--from", "1", "--to", str(head), "--format", "json"),
        "last.diff.txt": run(capsys, "diff", name, "--from", str(head - 1), "--to", str(head)),
    }
    out["explain.txt"] = "".join(run(capsys, "explain", name, ref) for ref in items_of(path))
    explained = [json.loads(run(capsys, "explain", name, ref, "--format", "json")) for ref in items_of(path)]
    out["explain.json"] = json.dumps(explained, indent=1, ensure_ascii=False) + "\n"
    return out


@pytest.mark.parametrize("path", INCIDENTS, ids=[p.stem for p in INCIDENTS])
def test_diff_and_explain_print_the_pinned_outputs(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    actual = outputs(capsys, path)
    for suffix, text in actual.items():
        golden = GOLDEN / f"{path.stem}.{suffix}"
        if os.environ.get("CASEBOARD_UPDATE_GOLDEN"):
            GOLDEN.mkdir(exist_ok=True)
            golden.write_text(text)
        assert golden.is_file(), f"{golden} is missing: regenerate with CASEBOARD_UPDATE_GOLDEN=1"
        assert text == golden.read_text(), f"{golden} differs"


def test_the_explanation_of_proposal_008_names_the_challenge_of_version_19(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = run(capsys, "explain", "corpus/incident-042.jsonl", "proposal-008")
    assert text.splitlines()[0].endswith(": requires_revalidation")
    assert (
        "because version 19 (log-specialist): link obs-failures-before-change challenges "
        "hyp-certificate-initiated-failure [material change on hyp-certificate-initiated-failure: "
        "proposal-008 depends on it]"
    ) in text
    data = json.loads(run(capsys, "explain", "corpus/incident-042.jsonl", "proposal-008", "--format", "json"))
    [status] = data["statuses"]
    material = [c for c in status["causes"] if c["kind"] == "material"]
    assert material == [
        {
            "version": 19,
            "author": "log-specialist",
            "kind": "material",
            "change": "link obs-failures-before-change challenges hyp-certificate-initiated-failure",
            "reference": "hyp-certificate-initiated-failure",
            "via": "proposal-008 depends on it",
        }
    ]


def test_a_diff_between_18_and_19_is_the_challenge(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(
        run(capsys, "diff", "corpus/incident-042.jsonl", "--from", "18", "--to", "19", "--format", "json")
    )
    changed = {c["path"]: (c["before"], c["after"]) for c in data["changes"]}
    assert changed["hypotheses.hyp-certificate-initiated-failure.status"] == ("supported", "challenged")
    assert changed["hypotheses.hyp-certificate-initiated-failure.challenging_evidence"] == (
        [],
        ["obs-failures-before-change"],
    )
    assert "hypotheses.hyp-certificate-initiated-failure.supporting_evidence" not in changed  # support stays
    assert [c["version"] for c in data["commits"]] == [19]


def test_the_command_line_refuses_mistakes_in_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/none.db"
    source = str(ROOT / "corpus" / "incident-042.jsonl")
    backwards = caseboard("diff", source, "--from", "5", "--to", "3", url=url)
    assert (backwards.returncode, backwards.stderr) == (
        2,
        "caseboard: --from 5 is after --to 3: give the earlier version first\n",
    )
    beyond = caseboard("diff", source, "--from", "5", "--to", "30", url=url)
    assert (beyond.returncode, beyond.stderr) == (2, "caseboard: --to 30: the record holds versions 1 to 20\n")
    both = caseboard("diff", source, "--from", "25", "--to", "30", url=url)
    assert (both.returncode, both.stderr) == (2, "caseboard: --from 25: the record holds versions 1 to 20\n")
    unknown = caseboard("explain", source, "proposal-999", url=url)
    assert unknown.returncode == 2
    assert unknown.stderr == "caseboard: 'proposal-999': no item of that id in versions 1 to 20 of this record\n"
    missing = caseboard("explain", "incident-404", "proposal-008", url=url)
    assert missing.returncode == 2 and len(missing.stderr.splitlines()) == 1, missing.stderr
    assert not (tmp_path / "none.db").exists()


def test_diff_and_explain_refuse_a_tampered_export(tmp_path: Path) -> None:
    lines = (ROOT / "corpus" / "incident-042.jsonl").read_text().splitlines()
    lines[9] = lines[9].replace("metrics", "metricz", 1)
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    url = f"sqlite:///{tmp_path}/none.db"
    for args in (("diff", str(tampered), "--from", "1", "--to", "20"), ("explain", str(tampered), "proposal-008")):
        done = caseboard(*args, url=url)
        assert done.returncode == 1, done.stderr
        assert "is not intact at version 10 (altered)" in done.stderr
        assert done.stdout == ""


def test_explain_tells_what_an_item_without_a_status_history_is(capsys: pytest.CaptureFixture[str]) -> None:
    work = run(capsys, "explain", "corpus/incident-042.jsonl", "certificate-check-006").splitlines()
    assert (
        work[0]
        == "certificate-check-006 (work_request) in corpus/incident-042.jsonl (workspace-rules-v4): awaiting_result"
    )
    assert work[3] == "  v18 2026-03-02T14:06:20Z planner-1"
    obs = run(capsys, "explain", "corpus/incident-042.jsonl", "obs-failures-before-change").splitlines()
    assert obs[0].startswith("obs-failures-before-change (observation) in ")
    assert "      link obs-failures-before-change challenges hyp-certificate-initiated-failure" in obs
