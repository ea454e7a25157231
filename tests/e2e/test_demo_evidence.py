"""The demo stores incident-042's synthetic artifacts and cites them: each citation resolves to the lines of
the packaged file, its export with the excerpts verifies, and a tampered stored artifact is caught."""

from __future__ import annotations

import hashlib
import json
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from caseboard.cli.demo import CITATIONS, EVIDENCE
from tests.e2e.test_demo_hint import AFTER, clean_env

ROOT = Path(__file__).resolve().parents[2]


def packaged_lines(name: str, first: int, last: int) -> str:
    text = resources.files("caseboard.scenarios").joinpath(name).read_text(encoding="utf-8")
    return "".join(text.splitlines(keepends=True)[first - 1 : last])


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One run of the demo as ``make run`` starts it: (its folder, everything it printed after version 20)."""
    cwd = tmp_path_factory.mktemp("demo")
    env = {
        **clean_env(),
        "CASEBOARD_DATABASE_URL": "sqlite:///.caseboard/demo/ledger.db",
        "CASEBOARD_LOG_LEVEL": "warning",
    }
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "caseboard"), "demo"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return cwd, done.stdout.split(AFTER, 1)[1]


def paste(cwd: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, shell=True, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=120, check=False
    )


def printed_commands(evidence: str) -> tuple[str, str]:
    export, verify = (line.strip() for line in evidence.strip().splitlines()[-2:])
    assert " export incident-042 --out " in export and export.endswith(" --with-excerpts")
    assert " verify " in verify
    return export, verify


def test_the_demos_citations_resolve_to_the_packaged_lines_and_its_export_verifies(demo: tuple[Path, str]) -> None:
    cwd, evidence = demo
    export, verify = printed_commands(evidence)
    assert paste(cwd, export).returncode == 0
    sidecar = next((cwd / ".caseboard" / "demo").glob("*.jsonl.excerpts.jsonl"))
    records = [json.loads(line) for line in sidecar.read_text(encoding="utf-8").splitlines()]
    assert [r["observation"] for r in records] == [c[0] for c in CITATIONS]
    for record, (name, *_), citation in zip(records, EVIDENCE, CITATIONS, strict=True):
        first, last = citation[4]
        expected = packaged_lines(name, first, last)
        assert record["lines"] == [first, last] and record["text"] == expected
        assert record["sha256"] == hashlib.sha256(expected.encode()).hexdigest()
        assert (
            record["artifact"]
            == "sha256:"
            + hashlib.sha256(resources.files("caseboard.scenarios").joinpath(name).read_bytes()).hexdigest()
        )
        assert f"excerpt sha256={record['sha256']}" in evidence  # the view printed shows the recorded hash
        assert json.dumps(expected)[1:60] in evidence  # and the excerpt itself, quoted
    checked = paste(cwd, verify + " --format json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["intact"] is True

    # the check can fail: an excerpt changed beside the export is named
    first = records[0]
    first["text"] = first["text"].replace("auth_failure", "auth ok", 1)
    sidecar.write_text("".join(json.dumps(r) + "\n" for r in [first, *records[1:]]), encoding="utf-8")
    report = json.loads(paste(cwd, verify + " --format json").stdout)
    assert (report["intact"], report["kind"], report["first_bad_version"]) == (False, "excerpt_mismatch", 21)


def test_a_stored_demo_artifact_changed_on_disk_is_caught_by_verify_of_the_workspace(demo: tuple[Path, str]) -> None:
    cwd, _ = demo
    url = "sqlite:///.caseboard/demo/ledger.db"
    intact = paste(cwd, f"{ROOT}/.venv/bin/caseboard --database-url {url} verify incident-042 --format json")
    assert intact.returncode == 0 and json.loads(intact.stdout)["intact"] is True
    change_id = (
        "sha256:"
        + hashlib.sha256(resources.files("caseboard.scenarios").joinpath(EVIDENCE[1][0]).read_bytes()).hexdigest()
    )
    hexdigest = change_id.removeprefix("sha256:")
    blob = next((cwd / ".caseboard" / "demo" / "artifacts").glob(f"*/{hexdigest[:2]}/{hexdigest}"))
    blob.write_bytes(blob.read_bytes().replace(b"14:00:40", b"14:09:40"))
    report = json.loads(
        paste(cwd, f"{ROOT}/.venv/bin/caseboard --database-url {url} verify incident-042 --format json").stdout
    )
    assert (report["intact"], report["kind"], report["first_bad_version"]) == (False, "excerpt_mismatch", 22)
