"""A workspace's history, version by version: what each commit changed and why each status changed.

``walk(commits, reducer)`` is the one function behind ``caseboard diff``, ``caseboard explain``, the report
and ``/ui/`` (docs/auditor.md, ADR 0100). It folds the commits with the named reducer, in order, and yields
for each version a ``Step``: the commit (who, when, its items and the coordinator's decisions), the changes
it made to the projection (``Change``: a path, the value before, the value after) and the statuses of
proposals and hypotheses it changed, each with its cause (``StatusChange``). Reducers stay pure: the walk
only folds and asks the ``Reducer`` interface (statuses, ``rests_on``, ``review_gaps``,
``revalidation_causes``).

What is compared at each version (``facets``) is what an auditor asks about: the workspace status and
counters, the selection, every hypothesis (status and evidence), every proposal (status and the version it
was last checked against), every work request, every question, and the observations and late arrivals the
commit recorded. Its cost follows the number of those items, not the history's length: a version's diff
never renders the whole projection (ADR 0101).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from caseboard.domain import items as it
from caseboard.domain.commit import Commit, describe
from caseboard.domain.errors import CaseboardError
from caseboard.reducers import Reducer, WorkspaceState

ABSENT: Any = None


@dataclass(frozen=True)
class Change:
    """One path of the projection whose value a commit changed (``before`` None: it appeared)."""

    path: str
    before: Any
    after: Any

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class Cause:
    """A commit that made a status what it is: its version, its author, what it did (``change``) and, for a
    material change, the dependency it touched and how the item rests on it."""

    version: int
    author: str
    change: str
    kind: str
    reference: str | None = None
    via: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": self.version, "author": self.author, "kind": self.kind}
        out["change"] = self.change
        if self.reference is not None:
            out["reference"] = self.reference
        if self.via is not None:
            out["via"] = self.via
        return out

    def sentence(self) -> str:
        where = f"version {self.version} ({self.author})"
        if self.kind == "material" and self.reference is not None:
            return f"{where}: {self.change}, a material change on {self.reference} ({self.via})"
        if self.kind == "expired" and self.reference is not None:
            return f"{self.change} ({self.via}; recorded at {where})"
        return f"{where}: {self.change}"


@dataclass(frozen=True)
class StatusChange:
    """The status of a proposal or hypothesis at ``version`` became ``after`` (``before`` None: it was
    recorded with it), because of ``causes``."""

    kind: str
    item: str
    version: int
    before: str | None
    after: str
    causes: tuple[Cause, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "item": self.item,
            "version": self.version,
            "before": self.before,
            "after": self.after,
            "causes": [cause.to_dict() for cause in self.causes],
        }

    def line(self) -> str:
        became = f"{self.before} -> {self.after}" if self.before is not None else f"recorded {self.after}"
        why = "; ".join(cause.sentence() for cause in self.causes) or "no recorded cause"
        return f"v{self.version} {self.kind} {self.item}: {became}, because {why}"


@dataclass(frozen=True)
class Step:
    """One version: its commit, what it changed in the projection, and the statuses it changed."""

    version: int
    at: str
    author: str
    role: str
    hash: str | None
    items: tuple[str, ...]
    decisions: tuple[dict[str, Any], ...]
    changes: tuple[Change, ...]
    status_changes: tuple[StatusChange, ...]
    judgments: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "at": self.at,
            "author": self.author,
            "role": self.role,
            "hash": self.hash,
            "items": list(self.items),
            "decisions": [dict(d) for d in self.decisions],
            "changes": [change.to_dict() for change in self.changes],
            "status_changes": [change.to_dict() for change in self.status_changes],
            "judgments": list(self.judgments),
        }


@dataclass
class Walk:
    """The state of a walk in progress: the reducer's state after the last step, and its facets."""

    reducer: Reducer[WorkspaceState]
    state: WorkspaceState | None = None
    facets: dict[str, Any] = field(default_factory=dict)
    touched: dict[int, list[tuple[str, frozenset[str], str]]] = field(default_factory=dict)
    authors: dict[int, str] = field(default_factory=dict)


def walk(commits: Iterable[Commit], reducer: Reducer[WorkspaceState], source: str = "the record") -> Iterator[Step]:
    """Fold ``commits`` (versions 1, 2, ... of one workspace) and yield each version's ``Step``."""
    run = Walk(reducer)
    for commit in commits:
        yield advance(run, commit, source)


def advance(run: Walk, commit: Commit, source: str = "the record") -> Step:
    """Fold one more commit into ``run`` and say what it changed."""
    reducer = run.reducer
    state = run.state
    if state is None:
        state = reducer.initial(commit.workspace_id)
    if commit.workspace_id != state.workspace_id or commit.version != state.version + 1:
        raise CaseboardError(
            f"{source}: version {commit.version} of {commit.workspace_id!r} cannot follow version "
            f"{state.version} of {state.workspace_id!r}; 'caseboard verify' names the first bad version"
        )
    state = run.state = reducer.evolve(state, commit)
    named = [frozenset(references(item)) for item in commit.items]
    run.touched[commit.version] = [
        (told(item), refs, item.type) for item, refs in zip(commit.items, named, strict=True)
    ]
    run.authors[commit.version] = commit.author.principal
    after = facets(state, reducer, commit, frozenset().union(*named))
    before = run.facets
    changes = diff_facets(before, after)
    run.facets = {key: value for key, value in after.items() if not key.startswith(("observations.", "late."))}
    statuses = tuple(_status_changes(run, state, commit, before, after))
    judgments = tuple(judgment_entry(item, commit) for item in commit.items if isinstance(item, it.Judgment))
    return Step(
        version=commit.version,
        at=iso(commit.at),
        author=commit.author.principal,
        role=commit.author.role.value,
        hash=commit.hash,
        items=tuple(describe(item) for item in commit.items),
        decisions=tuple(d for d in commit.decisions if d),
        changes=tuple(changes),
        status_changes=statuses,
        judgments=judgments,
    )


STATUS_ITEMS = frozenset(
    {"hypothesis", "link", "verification", "review", "proposal", "observation", "work_result", "constraints"}
)
"""The item types that can change a hypothesis's or a proposal's status: what a cause names."""


def told(item: it.Item) -> str:
    """An item as a cause names it: ``describe``, with a proposal's basis and a review's version."""
    if isinstance(item, it.Proposal):
        return f"proposal {item.id} recorded on basis version {item.based_on_workspace_version}"
    if isinstance(item, it.Review):
        against = item.based_on_workspace_version
        return f"review {item.proposal} {item.decision}" + (f" against version {against}" if against else "")
    if isinstance(item, it.Constraints):
        changed = [name for name in ("goal", "scope", "runtime_limits") if getattr(item, name) is not None]
        return f"constraints changed ({', '.join(changed)})"
    return describe(item)


def judgment_entry(item: it.Judgment, commit: Commit) -> dict[str, Any]:
    """A recorded model call: which model saw which version, and the tokens its output records."""
    usage = item.output.get("usage")
    tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
    return {
        "invocation_id": item.invocation_id,
        "component": item.component,
        "model": item.model,
        "version_shown": item.input_workspace_version,
        "tokens": tokens if isinstance(tokens, int) else None,
        "recorded_at_version": commit.version,
        "author": commit.author.principal,
        "prompt_sha256": item.prompt_sha256,
    }


def iso(moment: Any) -> str:
    return str(moment.isoformat().replace("+00:00", "Z"))


ONE = ("id", "request_id", "invocation_id", "proposal", "question", "claim", "observation", "hypothesis", "about")
MANY = ("supporting_evidence", "challenging_evidence", "depends_on", "evidence", "derived_from", "select", "deselect")
_FIELDS: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def references(item: Any) -> list[str]:
    """Every id an item names: its own, and those it refers to (a work result's observation's too)."""
    kind = type(item)
    fields = _FIELDS.get(kind)
    if fields is None:
        names = getattr(kind, "model_fields", {})
        fields = _FIELDS[kind] = (tuple(n for n in ONE if n in names), tuple(n for n in MANY if n in names))
    out: list[str] = []
    for name in fields[0]:
        value = getattr(item, name)
        if isinstance(value, str):
            out.append(value)
    for name in fields[1]:
        out.extend(str(v) for v in getattr(item, name) or ())
    if isinstance(item, it.WorkResult) and item.observation is not None:
        out.extend(references(item.observation))
    return out


def facets(
    state: WorkspaceState,
    reducer: Reducer[WorkspaceState],
    commit: Commit | None = None,
    named: frozenset[str] | None = None,
) -> dict[str, Any]:
    """What is compared from version to version (module docstring), as path -> value."""
    out: dict[str, Any] = {
        "status": state.status,
        "status_reason": state.status_reason,
        "cycles_used": state.cycles_used,
        "goal": state.goal,
        "scope": dict(state.scope),
        "runtime_limits": dict(state.limits),
        "selected_items": sorted(reducer.selected_now(state)),
    }
    for hyp in state.hypotheses.values():
        out[f"hypotheses.{hyp.id}.status"] = reducer.hypothesis_status(state, hyp)
        out[f"hypotheses.{hyp.id}.supporting_evidence"] = list(hyp.supporting)
        out[f"hypotheses.{hyp.id}.challenging_evidence"] = list(hyp.challenging)
    for proposal in state.proposals.values():
        out[f"proposals.{proposal.id}.status"] = reducer.proposal_status(state, proposal, state.at)
        out[f"proposals.{proposal.id}.last_checked_against_version"] = proposal.checked_at
    for work in state.work.values():
        out[f"work.{work.request_id}.status"] = work.status
        out[f"work.{work.request_id}.generation"] = work.generation
        out[f"work.{work.request_id}.holder"] = work.holder
    for question in state.questions.values():
        out[f"questions.{question.id}"] = "open" if question.answered_version is None else "answered"
    if commit is not None:
        for ref in sorted(named if named is not None else {r for item in commit.items for r in references(item)}):
            obs = state.observations.get(ref)
            if obs is not None and obs.version == commit.version:
                out[f"observations.{ref}"] = {
                    "event_time": iso(obs.event_time),
                    "event_time_quality": obs.event_time_quality,
                    "ingested_at": iso(obs.ingested_at),
                    "late_arrival": obs.late,
                }
        for late in state.late_arrivals.values():
            if late.version == commit.version:
                out[f"late.{late.ref}"] = late.type
    return out


def diff_facets(before: dict[str, Any], after: dict[str, Any]) -> list[Change]:
    """The paths whose values differ, in a stable order (sections, then ids)."""
    found = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path, ABSENT), after.get(path, ABSENT)
        if old != new:
            found.append(Change(path, old, new))
    return found


def _status_changes(
    run: Walk, state: WorkspaceState, commit: Commit, before: dict[str, Any], after: dict[str, Any]
) -> Iterator[StatusChange]:
    for path, status in after.items():
        if not path.endswith(".status") or path == "status":
            continue
        section, _, rest = path.partition(".")
        if section not in ("hypotheses", "proposals"):
            continue
        ref = rest.removesuffix(".status")
        old = before.get(path)
        if old == status:
            continue
        kind = "hypothesis" if section == "hypotheses" else "proposal"
        causes = _proposal_causes(run, state, ref, commit) if kind == "proposal" else _direct(run, ref, commit)
        yield StatusChange(kind, ref, commit.version, old, status, tuple(causes))


def _direct(run: Walk, ref: str, commit: Commit) -> list[Cause]:
    """The items of ``commit`` that name ``ref``."""
    return [
        Cause(commit.version, commit.author.principal, what, "recorded")
        for what, refs, kind in run.touched[commit.version]
        if ref in refs and kind in STATUS_ITEMS
    ]


def _proposal_causes(run: Walk, state: WorkspaceState, ref: str, commit: Commit) -> list[Cause]:
    proposal = state.proposals[ref]
    causes = _direct(run, ref, commit)
    status = run.reducer.proposal_status(state, proposal, state.at)
    if status != "requires_revalidation":
        return causes
    for found in run.reducer.revalidation_causes(state, proposal, state.at):
        author = run.authors.get(found.version, "?")
        via = _how_it_rests(state, proposal, found.reference)
        if found.kind == "expired":
            expired = iso(found.expired_at) if found.expired_at is not None else "?"
            change = f"observation {found.reference} expired at {expired}, before this version's commit time"
            causes.append(Cause(found.version, author, change, "expired", found.reference, via))
            continue
        if found.kind == "constraints":
            what = [w for w, _, kind in run.touched.get(found.version, []) if kind == "constraints"]
            change = ", ".join(what) or "a change of constraints"
            causes.append(Cause(found.version, author, change, "constraints", None, "every proposal rests on them"))
            continue
        what = [
            w
            for w, refs, kind in run.touched.get(found.version, [])
            if found.reference in refs and kind in STATUS_ITEMS
        ]
        change = ", ".join(what) or "a material change"
        causes.append(Cause(found.version, author, change, "material", found.reference, via))
    return causes


def _how_it_rests(state: WorkspaceState, proposal: Any, ref: str) -> str:
    if ref in proposal.depends_on:
        return f"{proposal.id} depends on it"
    for dep in proposal.depends_on:
        hyp = state.hypotheses.get(dep)
        if hyp is not None and ref in hyp.supporting:
            return f"evidence supporting {dep}, which {proposal.id} depends on"
        if hyp is not None and ref in hyp.challenging:
            return f"evidence challenging {dep}, which {proposal.id} depends on"
    return f"in what {proposal.id} rests on"


def between(steps: Iterable[Step], start: int, end: int) -> list[Step]:
    """The steps of versions ``start + 1`` to ``end``."""
    return [step for step in steps if start < step.version <= end]


@dataclass
class History:
    """Every step of a walk, the facets at the versions asked for, and the state after the last step."""

    steps: list[Step]
    facets_at: dict[int, dict[str, Any]]
    state: WorkspaceState | None
    reducer: Reducer[WorkspaceState]

    @property
    def head(self) -> int:
        return self.steps[-1].version if self.steps else 0


def history(
    commits: Iterable[Commit],
    reducer: Reducer[WorkspaceState],
    *,
    upto: int | None = None,
    keep: Iterable[int] = (),
    source: str = "the record",
) -> History:
    """``walk`` to ``upto`` (the last commit when None), keeping the facets of the versions in ``keep``."""
    wanted = set(keep)
    run = Walk(reducer)
    steps: list[Step] = []
    facets_at: dict[int, dict[str, Any]] = {0: {}} if 0 in wanted else {}
    for commit in commits:
        if upto is not None and commit.version > upto:
            break
        steps.append(advance(run, commit, source))
        if commit.version in wanted:
            facets_at[commit.version] = dict(run.facets)
    return History(steps, facets_at, run.state, reducer)


class VersionNotRecorded(CaseboardError):
    """A version the record does not hold (``--from``/``--to``/``--at-version`` beyond its head)."""


def check_versions(head: int, **versions: int | None) -> None:
    for name, version in versions.items():
        if version is None:
            continue
        if version < 0 or version > head:
            option = name.strip("_").replace("_", "-")  # from_ is --from
            raise VersionNotRecorded(f"--{option} {version}: the record holds versions 1 to {head}")


def diff(steps: list[Step], facets_at: dict[int, dict[str, Any]], start: int, end: int) -> dict[str, Any]:
    """What changed from version ``start`` to version ``end``: the projection's changed paths, the commits in
    between (who, what, the coordinator's decisions) and every status they changed, with its cause."""
    if start > end:
        raise CaseboardError(f"--from {start} is after --to {end}: give the earlier version first")
    inside = between(steps, start, end)
    changes = diff_facets(facets_at[start], facets_at[end])
    added = [c for step in inside for c in step.changes if c.path.startswith(("observations.", "late."))]
    return {
        "from": start,
        "to": end,
        "changes": [c.to_dict() for c in [*changes, *added]],
        "commits": [
            {
                "version": s.version,
                "at": s.at,
                "author": s.author,
                "role": s.role,
                "items": list(s.items),
                "decisions": [dict(d) for d in s.decisions],
            }
            for s in inside
        ],
        "status_changes": [sc.to_dict() for s in inside for sc in s.status_changes],
    }


def explain(steps: list[Step], ref: str) -> dict[str, Any]:
    """The history of one item: every status it had with the commit that caused it, and every commit that
    named it or changed what the projection shows of it."""
    statuses = [sc for step in steps for sc in step.status_changes if sc.item == ref]
    touched: list[dict[str, Any]] = []
    kind = statuses[0].kind if statuses else None
    for step in steps:
        changes = [c for c in step.changes if _about(c.path, ref)]
        named = [what for what in step.items if ref in what.split()]
        if changes or named:
            touched.append(
                {
                    "version": step.version,
                    "at": step.at,
                    "author": step.author,
                    "items": named,
                    "changes": [c.to_dict() for c in changes],
                }
            )
    if kind is None:
        sections = [c["path"].split(".", 1)[0] for entry in touched for c in entry["changes"]]
        kind = next((KINDS[section] for section in sections if section in KINDS), None)
    if not touched and not statuses:
        head = steps[-1].version if steps else 0
        raise CaseboardError(f"{ref!r}: no item of that id in versions 1 to {head} of this record")
    return {
        "id": ref,
        "kind": kind,
        "status": statuses[-1].after if statuses else _last_status(touched, ref),
        "statuses": [sc.to_dict() for sc in statuses],
        "commits": touched,
    }


KINDS = {"observations": "observation", "work": "work_request", "questions": "question", "late": "late_arrival"}
"""What an item is, by the section of the projection its changes are in."""


def _last_status(touched: list[dict[str, Any]], ref: str) -> Any:
    """The status the projection last showed of an item without a status history (a work request's, a
    question's state)."""
    found = None
    for entry in touched:
        for change in entry["changes"]:
            if change["path"] in (f"work.{ref}.status", f"questions.{ref}"):
                found = change["after"]
    return found


def _about(path: str, ref: str) -> bool:
    parts = path.split(".", 1)
    return len(parts) == 2 and (parts[1] == ref or parts[1].startswith(ref + "."))
