"""Named mutants: each deletes one guard the project promises, and the suite must fail with it (issue 20).

If deleting a guard does not turn a test red, the guard was not load-bearing, or the tests do not look at
what it guards. Each mutant is applied to a copy of the package in a temporary folder (the source is never
touched) and a fast selection of the suite runs against the copy: the state machine
(tests/integration/test_coordinator_machine.py) and the rules' unit tests. Each must fail.

A mutant names the exact text it replaces, and the test fails first if that text is gone, so a refactor that
moves a guard must move its mutant too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = [
    "tests/integration/test_coordinator_machine.py::test_the_coordinator_keeps_its_guarantees_on_sqlite",
    "tests/unit/test_rules.py",
]


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    original: str
    mutated: str


MUTANTS = [
    Mutant(
        "expected-version check",
        "caseboard/coordinator/decide.py",
        "    if expected < state.version:\n        raise Behind(expected, state.version)\n",
        "    if False:\n        raise Behind(expected, state.version)\n",
    ),
    Mutant(
        "generation fence",
        "caseboard/coordinator/item_rules.py",
        "    if request.holder is None or generation != request.generation:\n",
        "    if request.holder is None:\n",
    ),
    Mutant(
        "idempotency check",
        "caseboard/coordinator/decide.py",
        "        previous = state.idempotency.get(slot)\n",
        "        previous = None\n",
    ),
    Mutant(
        "material-change rule",
        "caseboard/reducers/workspace_rules_v1/evolve.py",
        "challenging=(*hyp.challenging, item.observation))\n                state.material[hyp.id] = version\n",
        "challenging=(*hyp.challenging, item.observation))\n",
    ),
    Mutant(
        "independent verification",
        "caseboard/coordinator/item_rules.py",
        "    if same_principal(runner, hyp.author):\n",
        "    if False:\n",
    ),
    Mutant(
        "exhausted means stopped",
        "caseboard/coordinator/item_rules.py",
        "    if c.reducer.stopped(c.state):\n",
        "    if False:\n",
    ),
    Mutant(
        "coverage rule (rule 1 of docs/rules-of-evidence.md)",
        "caseboard/reducers/workspace_rules_v4/evolve.py",
        '            if missing:\n                _unsettled(state, commit, "verification",',
        '            if False:\n                _unsettled(state, commit, "verification",',
    ),
    Mutant(
        "refusal rollback",
        "caseboard/coordinator/decide.py",
        "draft, draft_commit = state.fork(), ",
        "draft, draft_commit = state, ",
    ),
]


def copy_of_the_project(into: Path) -> Path:
    for name in ("caseboard", "tests"):
        shutil.copytree(ROOT / name, into / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "schemas"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, into / name)
        elif source.exists():
            shutil.copy(source, into / name)
    if (ROOT.parent / "shared").exists() and not (into.parent / "shared").exists():
        (into.parent / "shared").symlink_to(ROOT.parent / "shared")
    return into


def run_the_selection(project: Path) -> subprocess.CompletedProcess[str]:
    """The selection of ``TESTS``, against the copy in ``project`` (first on the path, so it is what is
    imported)."""
    env = {**os.environ, "PYTHONPATH": str(project), "CASEBOARD_LOG_LEVEL": "error"}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *TESTS],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda mutant: mutant.name)
def test_the_suite_fails_with_the_named_mutant(mutant: Mutant, tmp_path: Path) -> None:
    source = (ROOT / mutant.path).read_text()
    assert source.count(mutant.original) == 1, f"{mutant.name}: the guard moved; move its mutant with it"
    project = copy_of_the_project(tmp_path / "project")
    (project / mutant.path).write_text(source.replace(mutant.original, mutant.mutated))
    run = run_the_selection(project)
    tail = "\n".join(run.stdout.splitlines()[-5:])
    assert run.returncode == 1, f"{mutant.name}: the suite did not fail (exit {run.returncode}):\n{tail}"


def test_the_unmutated_selection_passes_against_a_copy(tmp_path: Path) -> None:
    """The control: the same selection, run the same way against an unmutated copy, passes, so each failure
    above is the mutant's."""
    run = run_the_selection(copy_of_the_project(tmp_path / "project"))
    assert run.returncode == 0, "\n".join(run.stdout.splitlines()[-15:])
