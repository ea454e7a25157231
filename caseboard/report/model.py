"""What the auditor's page shows, gathered by one replay of the record (``caseboard.replay.history.history``).

Nothing here is stored or derived elsewhere: the page at version N is the walk of versions 1..N, the
projection the reducer renders at N, and the chain report ``verify`` gives. A record whose chain is broken is
shown up to the last version before the first bad one, and says so at the top.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from caseboard.domain.commit import Commit
from caseboard.domain.errors import CaseboardError
from caseboard.projections.timeline import timeline
from caseboard.reducers import Reducer, WorkspaceState
from caseboard.replay.excerpts import tenant_of
from caseboard.replay.history import VersionNotRecorded, facets, history
from caseboard.replay.verify import ChainReport
from caseboard.report import attached
from caseboard.report.attached import Holder
from caseboard.report.source import Record


@dataclass
class Report:
    """Everything one page shows (``page.render`` writes it)."""

    workspace_id: str
    source: str
    reducer: str
    recorded: int
    """The versions the record holds that can be shown: all of them, or those before the first bad one."""
    version: int
    """The version shown."""
    chain: dict[str, Any]
    projection: dict[str, Any]
    timeline: list[dict[str, Any]]
    graph: dict[str, list[dict[str, Any]]]
    steps: list[dict[str, Any]]
    statuses: dict[str, list[dict[str, Any]]]
    judgments: list[dict[str, Any]]
    extra: dict[str, Any] = field(default_factory=dict)
    excerpts: list[dict[str, Any]] | None = None
    """The cited excerpts with their bytes (``attached.excerpts``); None when not gathered."""
    calls: list[dict[str, Any]] | None = None
    """Each judgment's prompt and reply (``attached.calls``); None when not gathered."""

    @property
    def intact(self) -> bool:
        return bool(self.chain["intact"])

    @property
    def mismatched(self) -> list[str]:
        """The excerpts, prompts and replies shown whose bytes do not hash to what their commit recorded."""
        found = [
            f"the excerpt {x['evidence_ref']} (version {x['version']})"
            for x in self.excerpts or ()
            if x["check"] == "mismatch"
        ]
        for call in self.calls or ():
            found += [
                f"the {name} of {call['invocation_id']}"
                for name in ("prompt", "reply")
                if call[name]["check"] == "mismatch"
            ]
        return found


def chain_summary(chain: ChainReport) -> dict[str, Any]:
    out = chain.to_dict()
    out["line"] = chain.line()
    return out


def shown_commits(commits: Iterable[Commit], chain: ChainReport) -> Iterator[Commit]:
    """The commits a page may show: all of an intact chain; those before the first bad version otherwise."""
    last = None if chain.problem is None else chain.problem.version - 1
    expected = 1
    for commit in commits:
        if (last is not None and commit.version > last) or commit.version != expected:
            return
        expected += 1
        yield commit


def build(
    commits: Iterable[Commit],
    chain: ChainReport,
    reducer: Reducer[WorkspaceState],
    at_version: int | None = None,
    source: str = "the record",
) -> Report:
    """Replay ``commits`` (checked by ``chain``) to ``at_version`` (the last shown version when None)."""
    if at_version is not None and at_version < 1:
        raise CaseboardError(f"--at-version {at_version}: versions start at 1")
    walked = history(shown_commits(commits, chain), reducer, upto=at_version, source=source)
    state = walked.state
    if state is None:
        raise CaseboardError(_nothing(chain, source))
    available = walked.head
    recorded = max(available, chain.problem.version - 1 if chain.problem is not None else chain.commits)
    if at_version is not None and available < at_version:
        raise VersionNotRecorded(_beyond(at_version, available, chain))
    projection = reducer.render(state)
    now = facets(state, reducer)
    steps = [step.to_dict() for step in walked.steps]
    statuses: dict[str, list[dict[str, Any]]] = {}
    for step in walked.steps:
        for change in step.status_changes:
            entry = change.to_dict()
            entry["why"] = change.line()
            statuses.setdefault(change.item, []).append(entry)
    return Report(
        workspace_id=state.workspace_id,
        source=source,
        reducer=reducer.name,
        recorded=recorded,
        version=state.version,
        chain=chain_summary(chain),
        projection=projection,
        timeline=timeline(projection),
        graph=graph(projection, now),
        steps=steps,
        statuses=statuses,
        judgments=[j for step in walked.steps for j in step.judgments],
    )


def _nothing(chain: ChainReport, source: str) -> str:
    if chain.problem is not None:
        return f"{source}: nothing can be shown: {chain.line()}"
    return f"{source} holds no commits"


def _beyond(at_version: int, available: int, chain: ChainReport) -> str:
    if chain.problem is not None:
        return (
            f"--at-version {at_version}: only versions 1 to {available} can be shown; the chain is broken at "
            f"version {chain.problem.version} ({chain.problem.kind})"
        )
    return f"--at-version {at_version}: the record holds versions 1 to {available}"


def graph(projection: dict[str, Any], now: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The evidence graph at the version shown: hypotheses, proposals, pending work and the observations that
    bear on them (evidence, dependencies, the selection) as nodes; supports, challenges and depends_on as
    edges. An observation that both supports and challenges has both edges."""
    observations = {o["id"]: o for o in projection["observations"]}
    hypotheses = {h["id"]: h for h in projection["hypotheses"]}
    statements = {h["id"]: h.get("statement", "") for h in projection["selected_items"]["hypotheses"]}
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[dict[str, Any]] = []

    def observation(ref: str) -> None:
        obs = observations.get(ref)
        if obs is None or ref in nodes:
            return
        status = "stale" if obs["stale"] else "late" if obs["late_arrival"] else obs["event_time_quality"]
        shown = f"event time {obs['event_time_quality']}"
        shown += ", stale" if obs["stale"] else ""
        shown += ", late arrival" if obs["late_arrival"] else ""
        nodes[ref] = {
            "id": ref,
            "kind": "observation",
            "status": status,
            "shown": shown,
            "label": ref,
            "text": obs["statement"],
        }

    for ref, hyp in hypotheses.items():
        nodes[ref] = {
            "id": ref,
            "kind": "hypothesis",
            "status": hyp["status"],
            "label": ref,
            "text": statements.get(ref, ""),
        }
        for relation, key in (("supports", "supporting_evidence"), ("challenges", "challenging_evidence")):
            for evidence in now.get(f"hypotheses.{ref}.{key}", ()):
                observation(evidence)
                edges.append(
                    {"id": f"{evidence}-{relation}-{ref}", "source": evidence, "target": ref, "relation": relation}
                )
    summaries = {p["id"]: p.get("summary", "") for p in projection.get("proposal_records", ())}
    for proposal in projection["proposals"]:
        ref = proposal["id"]
        nodes[ref] = {
            "id": ref,
            "kind": "proposal",
            "status": proposal["status"],
            "label": ref,
            "text": summaries.get(ref, ""),
        }
    for proposal in projection["proposals"]:
        for dep in proposal["depends_on"]:
            observation(dep)
            if dep in nodes:
                edges.append(
                    {
                        "id": f"{proposal['id']}-depends_on-{dep}",
                        "source": proposal["id"],
                        "target": dep,
                        "relation": "depends_on",
                    }
                )
    for ref in projection["selected_items"]["observations"] + projection["selected_items"]["derived_summaries"]:
        observation(ref)
    for work in projection["pending_work"]:
        ref = work["request_id"]
        nodes[ref] = {"id": ref, "kind": "work", "status": work["status"], "label": ref, "text": ""}
    return {"nodes": list(nodes.values()), "edges": edges}


def build_from(
    record: Record, reducer: Reducer[WorkspaceState], at_version: int | None = None, holder: Holder | None = None
) -> Report:
    """``build`` over a record opened by ``caseboard.report.source``; with ``holder``, the cited excerpts and
    each judgment's prompt and reply of the versions shown too (``attached``)."""
    if holder is None:
        return build(record.commits, record.chain, reducer, at_version, record.source)
    commits = list(record.commits)
    report = build(commits, record.chain, reducer, at_version, record.source)
    shown = [commit for commit in commits if commit.version <= report.version]
    report.excerpts = attached.excerpts(shown, holder)
    report.calls = attached.calls(shown, holder, tenant_of(shown))
    return report
