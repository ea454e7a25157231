"""Reducers are plugins: a distribution that registers a ``caseboard.reducers`` entry point is a reducer
``--reducer`` and ``CASEBOARD_REDUCER`` accept, with no change to caseboard (docs/reducers.md).

``examples/reducer-plugin`` is such a distribution (workspace-rules-v4 with one rule changed, the rule of two):
it is installed here as a user installs it, by pip (the venv's setuptools builds it, offline), into a
directory put on ``PYTHONPATH``; the command line and the property tests run in processes of their own, which
read the entry points afresh. Broken plugins are a package and a dist-info written by hand, as ``pip install``
would leave them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from caseboard.domain.errors import ConfigurationError, UnknownReducer
from caseboard.reducers import GROUP, REDUCERS, RELEASED, Reducer, Registry, get_reducer

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"
EXAMPLE = ROOT / "examples" / "reducer-plugin"

BROKEN = '''"""Reducers that caseboard refuses by name."""
import dataclasses

from caseboard.reducers import get_reducer

NOT_A_REDUCER = {"name": "broken-rules-v5"}
MISNAMED = dataclasses.replace(get_reducer("workspace-rules-v1"), name="something-else")
OF_V2 = dataclasses.replace(get_reducer("workspace-rules-v2"), name="broken-rules-v5")
'''


def install_plugin(site: Path, points: dict[str, str]) -> None:
    """What ``pip install`` of a small distribution leaves in site-packages: its package and its dist-info."""
    (site / "broken_rules").mkdir(parents=True, exist_ok=True)
    (site / "broken_rules" / "__init__.py").write_text(BROKEN)
    info = site / "broken_rules-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-rules\nVersion: 0.1\n")
    lines = "".join(f"{name} = {target}\n" for name, target in points.items())
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{lines}")


@pytest.fixture(scope="module")
def acme(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``examples/reducer-plugin`` installed by pip into a directory of its own (built from a copy, so that the
    build leaves nothing in the example): the directory to put on ``PYTHONPATH``."""
    scratch = tmp_path_factory.mktemp("acme")
    source, site = scratch / "source", scratch / "site"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    run = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(site), str(source)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    yield site


def caseboard(site: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    inherited = {name: value for name, value in os.environ.items() if name != "CASEBOARD_REDUCER"}
    paths = os.pathsep.join([str(site), str(ROOT)])
    environment = {**inherited, "PYTHONPATH": paths, "CASEBOARD_LOG_LEVEL": "error", **env}
    return subprocess.run(
        [sys.executable, "-m", "caseboard", *args],
        env=environment,
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


ACME = "acme-rules-v4"
RULE_OF_TWO = {  # incident: the versions at which its single-source hypothesis is supported in v4, proposed here
    "expired-evidence-044": ("hyp-client-bug", [4]),
    "instruction-text-078": ("hyp-refund-lock", [4, 5, 6, 7]),
    "late-arrival-017": ("hyp-failover", [5, 6, 7, 8]),
    "scope-change-051": ("hyp-acquirer-slow", [3, 4, 5, 6, 7, 8, 9]),
    "unsettled-evidence-092": ("hyp-chain-differs", list(range(3, 12))),
}


def test_the_example_plugin_is_compared_over_the_corpus_where_its_one_rule_differs(acme: Path) -> None:
    run = caseboard(
        acme, "compare", "--format", "json", "--reducer", "workspace-rules-v4", "--reducer", ACME, str(CORPUS)
    )
    assert run.returncode == 1, run.stderr
    result = json.loads(run.stdout)
    assert result["reducers"] == ["workspace-rules-v4", ACME]
    expected = [
        {"incident": incident, "version": version, "aspect": "hypothesis_status", "item": item,
         "a": "supported", "b": "proposed"}
        for incident, (item, versions) in sorted(RULE_OF_TWO.items())
        for version in versions
    ]  # fmt: skip
    assert result["differences"] == expected


def test_every_output_of_the_example_plugin_uses_its_rule_and_names_it(acme: Path) -> None:
    """``replay``, ``explain``, ``diff`` and ``show`` agree with each other and with the rule, under the plugin's
    name; with ``CASEBOARD_REDUCER`` naming it, it is the reducer of every command that names none."""
    incident = str(CORPUS / "scope-change-051.jsonl")
    for env in ({}, {"CASEBOARD_REDUCER": ACME}):
        chosen = [] if env else ["--reducer", ACME]
        replayed = caseboard(acme, "replay", *chosen, incident, **env)
        assert replayed.returncode == 0, replayed.stderr
        projection = json.loads(replayed.stdout)
        assert projection["reducer_version"] == ACME
        assert [(h["id"], h["status"]) for h in projection["hypotheses"]] == [("hyp-acquirer-slow", "proposed")]
        assert projection["selected_items"]["hypotheses"][0]["status"] == "proposed"
        explained = caseboard(acme, "explain", *chosen, incident, "hyp-acquirer-slow", "--format", "json", **env)
        assert explained.returncode == 0, explained.stderr
        story = json.loads(explained.stdout)
        assert (story["reducer"], story["status"]) == (ACME, "proposed")
        assert [s["after"] for s in story["statuses"]] == ["proposed"]
    plain = json.loads(caseboard(acme, "replay", incident).stdout)
    assert plain["reducer_version"] == "workspace-rules-v4"
    assert plain["hypotheses"][0]["status"] == "supported"


def test_the_property_tests_hold_for_the_example_plugin(acme: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit/test_reducer_properties.py",
         "-k", ACME],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(acme), str(ROOT)])},
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:]
    summary = run.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "skipped" not in summary, summary
    assert int(summary.split(" passed")[0].split()[-1]) >= 7, summary  # every property, for acme-rules-v4


def test_an_unknown_reducer_is_one_line_naming_the_registered_ones_plugins_included(acme: Path) -> None:
    run = caseboard(acme, "compare", "--reducer", "workspace-rules-v1", "--reducer", "acme-rules-v9", str(CORPUS))
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.splitlines() == [
        "caseboard: unknown reducer 'acme-rules-v9'; known reducers: acme-rules-v4, workspace-rules-v1, "
        "workspace-rules-v2, workspace-rules-v3, workspace-rules-v4"
    ]
    replay = caseboard(acme, "replay", "--reducer", "nope", str(CORPUS / "incident-042.jsonl"))
    assert replay.returncode == 2 and len(replay.stderr.splitlines()) == 1 and "unknown reducer 'nope'" in replay.stderr


def test_an_unknown_current_reducer_stops_the_start_with_one_line_naming_the_registered_ones(acme: Path) -> None:
    known = f"{ACME}, workspace-rules-v1, workspace-rules-v2, workspace-rules-v3, workspace-rules-v4"
    for command in (["replay", str(CORPUS / "incident-042.jsonl")], ["show", "incident-042"]):
        run = caseboard(acme, *command, CASEBOARD_REDUCER="acme-rules-v9")
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr.splitlines() == [
            f"caseboard: CASEBOARD_REDUCER: unknown reducer 'acme-rules-v9'; known reducers: {known}"
        ]


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("broken_rules:NOT_A_REDUCER", "is a dict, not a caseboard.reducers.Reducer"),
        ("broken_rules:MISNAMED", "names a reducer called 'something-else'"),
        ("broken_rules:ABSENT", "cannot be loaded"),
    ],
)
def test_a_broken_plugin_is_refused_by_name_when_it_is_used(tmp_path: Path, target: str, problem: str) -> None:
    install_plugin(tmp_path, {"broken-rules-v5": target})
    run = caseboard(tmp_path, "compare", "--reducer", "workspace-rules-v1", "--reducer", "broken-rules-v5", str(CORPUS))
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert line.startswith("caseboard: reducer 'broken-rules-v5'") and problem in line
    fine = caseboard(
        tmp_path, "compare", "--reducer", "workspace-rules-v1", "--reducer", "workspace-rules-v1", str(CORPUS)
    )
    assert fine.returncode == 0, fine.stderr  # a broken plugin breaks only what uses it


def test_a_plugin_may_not_take_a_released_reducers_name(tmp_path: Path) -> None:
    install_plugin(tmp_path, {"workspace-rules-v1": "broken_rules:OF_V2"})
    run = caseboard(
        tmp_path, "compare", "--reducer", "workspace-rules-v1", "--reducer", "workspace-rules-v2", str(CORPUS)
    )
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert "'workspace-rules-v1' (broken_rules:OF_V2) takes the name of" in line


def test_the_registry_lists_without_importing_and_loads_on_first_use(tmp_path: Path) -> None:
    registry = Registry(group="caseboard.no-such-group", released={"lazy": "tests.unit.no_such_module:REDUCER"})
    assert list(registry) == ["lazy"] and "lazy" in registry and len(registry) == 1
    with pytest.raises(ConfigurationError, match=r"reducer 'lazy' .* cannot be loaded"):
        registry["lazy"]
    with pytest.raises(UnknownReducer, match="unknown reducer 'other'; known reducers: lazy"):
        registry.get_reducer("other")
    assert get_reducer().name == "workspace-rules-v4"
