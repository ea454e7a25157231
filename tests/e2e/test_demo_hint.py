"""Every command the demo prints works when pasted: its hint names this program and this ledger."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from caseboard.cli.demo import program

ROOT = Path(__file__).resolve().parents[2]
HINT = re.compile(r"The workspace at version 20 \((?:the fields of the contract; )?the whole projection: (.+)\):")
AFTER = "\nThen the log and change specialists cite"
"""Where the version 20 document ends: the demo's cited evidence follows it (tests/e2e/test_demo_evidence.py)."""


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CASEBOARD_")}


def run_demo(cwd: Path, *command: str) -> tuple[str, str]:
    """The demo as ``make run`` starts it; returns (the printed hint, the document printed after it)."""
    env = {
        **clean_env(),
        "CASEBOARD_DATABASE_URL": "sqlite:///.caseboard/demo/ledger.db",
        "CASEBOARD_LOG_LEVEL": "warning",
    }
    done = subprocess.run(
        [*command, "demo"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    match = HINT.search(done.stdout)
    assert match, done.stdout
    assert AFTER in done.stdout[match.end() :], done.stdout
    return match.group(1), done.stdout[match.end() :].split(AFTER, 1)[0]


def test_the_demos_show_hint_pasted_into_a_shell_prints_the_same_version_20(tmp_path: Path) -> None:
    hint, printed = run_demo(tmp_path, str(ROOT / ".venv" / "bin" / "caseboard"))
    pasted = subprocess.run(
        hint, shell=True, cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=120, check=False
    )
    assert pasted.returncode == 0, pasted.stderr
    shown, demo = yaml.safe_load(pasted.stdout), yaml.safe_load(printed)
    assert shown["workspace_version"] == 20
    assert {key: shown[key] for key in demo} == demo
    assert set(demo) < set(shown)  # what the label says: the contract's fields of what the command prints


def test_the_hint_of_python_dash_m_caseboard_is_pasted_the_same_way(tmp_path: Path) -> None:
    hint, _ = run_demo(tmp_path, sys.executable, "-m", "caseboard")
    assert " -m caseboard --database-url sqlite:///.caseboard/demo/ledger.db show incident-042" in hint
    pasted = subprocess.run(
        hint, shell=True, cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=120, check=False
    )
    assert pasted.returncode == 0, pasted.stderr


def test_the_program_is_named_as_it_runs_from_the_repository_root() -> None:
    assert program(".venv/bin/caseboard", ROOT) == [".venv/bin/caseboard"] or program(".venv/bin/caseboard", ROOT) == [
        "caseboard"
    ]  # "caseboard" only when PATH finds this very one
    assert program(str(ROOT / "caseboard" / "__main__.py"), ROOT)[1:] == ["-m", "caseboard"]
