"""Reducers are plugins: a distribution that registers a ``caseboard.reducers`` entry point is a reducer
``--reducer`` accepts, with no change to caseboard (docs/reducers.md). The plugin here is a package and a
dist-info with ``entry_points.txt`` in a temporary directory on ``PYTHONPATH``, as ``pip install`` leaves it;
the command line runs in a process of its own, which reads the entry points afresh."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from caseboard.domain.errors import ConfigurationError, UnknownReducer
from caseboard.reducers import GROUP, REDUCERS, RELEASED, Reducer, Registry, get_reducer

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"

PLUGIN = '''"""A reducer of another distribution: v2's semantics under a name of its own."""
import dataclasses

from caseboard.reducers import get_reducer

REDUCER = dataclasses.replace(get_reducer("workspace-rules-v2"), name="acme-rules-v4")
NOT_A_REDUCER = {"name": "acme-rules-v5"}
MISNAMED = dataclasses.replace(get_reducer("workspace-rules-v1"), name="something-else")
'''


def install_plugin(site: Path, points: dict[str, str]) -> None:
    """What ``pip install`` of a small distribution leaves in site-packages: its package and its dist-info."""
    (site / "acme_rules").mkdir(parents=True, exist_ok=True)
    (site / "acme_rules" / "__init__.py").write_text(PLUGIN)
    info = site / "acme_rules-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-rules\nVersion: 0.1\n")
    lines = "".join(f"{name} = {target}\n" for name, target in points.items())
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{lines}")


def caseboard(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "CASEBOARD_LOG_LEVEL": "error"}
    return subprocess.run(
        [sys.executable, "-m", "caseboard", *args],
        env=env,
        cwd=site,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_caseboard_registers_its_released_reducers_as_entry_points() -> None:
    installed = {point.name: point.value for point in entry_points(group=GROUP)}
    assert {name: installed.get(name) for name in RELEASED} == RELEASED
    for name in RELEASED:
        assert REDUCERS[name].name == name and isinstance(REDUCERS[name], Reducer)


def test_a_plugin_reducer_is_compared_by_the_command_line(tmp_path: Path) -> None:
    install_plugin(tmp_path, {"acme-rules-v4": "acme_rules:REDUCER"})
    same = caseboard(tmp_path, "compare", "--reducer", "workspace-rules-v2", "--reducer", "acme-rules-v4", str(CORPUS))
    assert same.returncode == 0, same.stderr
    assert "the reducers agree" in same.stdout.splitlines()[0]
    against_v1 = caseboard(
        tmp_path, "compare", "--format", "json", "--reducer", "workspace-rules-v1", "--reducer", "acme-rules-v4",
        str(CORPUS),
    )  # fmt: skip
    assert against_v1.returncode == 1, against_v1.stderr
    result = json.loads(against_v1.stdout)
    assert result["reducers"] == ["workspace-rules-v1", "acme-rules-v4"]
    differing = sorted({d["incident"] for d in result["differences"]})
    assert differing == ["expired-evidence-044", "scope-change-051", "stale-proposal-066"]  # v1 against v2's


def test_an_unknown_reducer_is_one_line_naming_the_registered_ones_plugins_included(tmp_path: Path) -> None:
    install_plugin(tmp_path, {"acme-rules-v4": "acme_rules:REDUCER"})
    run = caseboard(tmp_path, "compare", "--reducer", "workspace-rules-v1", "--reducer", "acme-rules-v9", str(CORPUS))
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.splitlines() == [
        "caseboard: unknown reducer 'acme-rules-v9'; known reducers: acme-rules-v4, workspace-rules-v1, "
        "workspace-rules-v2, workspace-rules-v3, workspace-rules-v4"
    ]
    replay = caseboard(tmp_path, "replay", "--reducer", "nope", str(CORPUS / "incident-042.jsonl"))
    assert replay.returncode == 2 and len(replay.stderr.splitlines()) == 1 and "unknown reducer 'nope'" in replay.stderr


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("acme_rules:NOT_A_REDUCER", "is a dict, not a caseboard.reducers.Reducer"),
        ("acme_rules:MISNAMED", "names a reducer called 'something-else'"),
        ("acme_rules:ABSENT", "cannot be loaded"),
    ],
)
def test_a_broken_plugin_is_refused_by_name_when_it_is_used(tmp_path: Path, target: str, problem: str) -> None:
    install_plugin(tmp_path, {"acme-rules-v5": target})
    run = caseboard(tmp_path, "compare", "--reducer", "workspace-rules-v1", "--reducer", "acme-rules-v5", str(CORPUS))
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert line.startswith("caseboard: reducer 'acme-rules-v5'") and problem in line
    fine = caseboard(
        tmp_path, "compare", "--reducer", "workspace-rules-v1", "--reducer", "workspace-rules-v1", str(CORPUS)
    )
    assert fine.returncode == 0, fine.stderr  # a broken plugin breaks only what uses it


def test_a_plugin_may_not_take_a_released_reducers_name(tmp_path: Path) -> None:
    install_plugin(tmp_path, {"workspace-rules-v1": "acme_rules:REDUCER"})
    run = caseboard(
        tmp_path, "compare", "--reducer", "workspace-rules-v1", "--reducer", "workspace-rules-v2", str(CORPUS)
    )
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert "'workspace-rules-v1' (acme_rules:REDUCER) takes the name of" in line


def test_the_registry_lists_without_importing_and_loads_on_first_use(tmp_path: Path) -> None:
    registry = Registry(group="caseboard.no-such-group", released={"lazy": "tests.unit.no_such_module:REDUCER"})
    assert list(registry) == ["lazy"] and "lazy" in registry and len(registry) == 1
    with pytest.raises(ConfigurationError, match=r"reducer 'lazy' .* cannot be loaded"):
        registry["lazy"]
    with pytest.raises(UnknownReducer, match="unknown reducer 'other'; known reducers: lazy"):
        registry.get_reducer("other")
    assert get_reducer().name == "workspace-rules-v4"
