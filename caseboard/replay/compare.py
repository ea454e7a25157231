"""Comparing two reducer versions over recorded incidents, version by version.

For every incident and every version, both reducers fold the same commits; what an engineer evaluates in
their projections is compared: hypothesis statuses, proposal statuses, the workspace status and the selection.
A ``Difference`` names the incident, the version, the aspect, the item and both values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from caseboard.domain.commit import Commit
from caseboard.domain.errors import CaseboardError
from caseboard.reducers import Reducer, WorkspaceState, get_reducer
from caseboard.replay.records import read_file

ABSENT = "-"


@dataclass(frozen=True)
class Difference:
    incident: str
    version: int
    aspect: str
    item: str
    a: str
    b: str


@dataclass(frozen=True)
class Comparison:
    reducers: tuple[str, str]
    incidents: int
    versions: int
    differences: tuple[Difference, ...]

    @property
    def agree(self) -> bool:
        return not self.differences

    def to_dict(self) -> dict[str, Any]:
        return {
            "reducers": list(self.reducers),
            "incidents": self.incidents,
            "versions": self.versions,
            "agree": self.agree,
            "differences": [asdict(d) for d in self.differences],
        }


def facets(projection: dict[str, Any]) -> dict[str, dict[str, str]]:
    """What is compared, as aspect -> item -> value."""
    selected = projection["selected_items"]
    chosen = [
        *selected["observations"],
        *selected["derived_summaries"],
        *(h["id"] for h in selected["hypotheses"]),
    ]
    return {
        "workspace_status": {"workspace": projection["status"]},
        "hypothesis_status": {h["id"]: h["status"] for h in projection["hypotheses"]},
        "proposal_status": {p["id"]: p["status"] for p in projection["proposals"]},
        "selection": {item: "selected" for item in chosen},
    }


def state_facets(reducer: Reducer[WorkspaceState], state: WorkspaceState) -> dict[str, dict[str, str]]:
    """``facets(reducer.render(state))``, read from the state with the reducer's own rules, as its projection
    shows them (ADR 0170): at a cost that follows the hypotheses, proposals and selection, not every
    observation ever recorded, which a render lists (ADR 0101). A property test holds the two equal for every
    registered reducer (``tests/unit/test_reducer_properties.py``)."""
    chosen = (i for i in reducer.selected_now(state) if i in state.observations or i in state.hypotheses)
    return {
        "workspace_status": {"workspace": state.status},
        "hypothesis_status": {h.id: reducer.hypothesis_status(state, h) for h in state.hypotheses.values()},
        "proposal_status": {p.id: reducer.proposal_status(state, p, state.at) for p in state.proposals.values()},
        "selection": dict.fromkeys(chosen, "selected"),
    }


def differences(
    incident: str, version: int, left: dict[str, dict[str, str]], right: dict[str, dict[str, str]]
) -> list[Difference]:
    """Where two reducers' facets of one version differ, item by item."""
    out = []
    for aspect, values in left.items():
        other = right[aspect]
        for item in sorted(values.keys() | other.keys()):
            va, vb = values.get(item, ABSENT), other.get(item, ABSENT)
            if va != vb:
                out.append(Difference(incident, version, aspect, item, va, vb))
    return out


class DamagedIncident(CaseboardError):
    """A recorded incident whose commits cannot be folded in file order: a line deleted, moved or from
    another workspace, or no commits at all. A user's input, not a difference between reducers."""


def compare_commits(
    incident: str, commits: Iterable[Commit], first: str, second: str, source: str | None = None
) -> tuple[int, list[Difference]]:
    reducer_a, reducer_b = get_reducer(first), get_reducer(second)
    state_a = state_b = None
    found: list[Difference] = []
    versions = 0
    workspace_id: str | None = None
    where = source or incident
    for commit in commits:
        workspace_id = workspace_id or commit.key
        if commit.version != versions + 1 or commit.key != workspace_id:
            raise DamagedIncident(
                f"{where} is damaged: its commit {versions + 1} is version {commit.version} of "
                f"{commit.key!r} where version {versions + 1} of {workspace_id!r} belongs "
                f"(a line deleted, moved or foreign); 'caseboard verify {where}' names the first bad version"
            )
        state_a = reducer_a.evolve(state_a or reducer_a.initial(commit.workspace_id), commit)
        state_b = reducer_b.evolve(state_b or reducer_b.initial(commit.workspace_id), commit)
        found.extend(
            differences(incident, commit.version, state_facets(reducer_a, state_a), state_facets(reducer_b, state_b))
        )
        versions += 1
    if versions == 0:
        raise DamagedIncident(f"{where} holds no commits: a recorded incident has one commit per line")
    return versions, found


def incident_files(paths: Iterable[str]) -> list[Path]:
    """Recorded incidents named directly, or every ``*.jsonl`` directly inside a named directory."""
    files: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
            if not found:
                raise CaseboardError(f"{path}: no recorded incidents (*.jsonl) in this directory")
            files.extend(found)
        elif path.exists():  # a file; a device or a pipe is refused where it is read (``file_records``)
            files.append(path)
        else:
            raise CaseboardError(f"{name}: no such file or directory")
    return files


def compare(
    paths: Iterable[str], first: str, second: str, progress: Callable[[int, int, str], None] | None = None
) -> Comparison:
    get_reducer(first), get_reducer(second)  # unknown names fail before any work
    files = incident_files(paths)
    total_versions = 0
    found: list[Difference] = []
    for index, path in enumerate(files):
        if progress is not None:
            progress(index, len(files), path.name)
        versions, diffs = compare_commits(path.stem, read_file(path), first, second, str(path))
        total_versions += versions
        found.extend(diffs)
    if progress is not None:
        progress(len(files), len(files), "")
    return Comparison((first, second), len(files), total_versions, tuple(found))


def table(comparison: Comparison) -> str:
    a, b = comparison.reducers
    summary = f"{plural(comparison.incidents, 'incident')}, {plural(comparison.versions, 'version')}: " + (
        "the reducers agree" if comparison.agree else plural(len(comparison.differences), "difference")
    )
    if comparison.agree:
        return summary + "\n"
    header = ("INCIDENT", "VERSION", "ASPECT", "ITEM", a, b)
    rows = [header] + [(d.incident, str(d.version), d.aspect, d.item, d.a, d.b) for d in comparison.differences]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join([*lines, "", summary]) + "\n"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
