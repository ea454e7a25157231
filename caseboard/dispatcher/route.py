"""Selective routing: who needs to hear about a commit, decided from the commit and the state after it.

``route(commit, state)`` is pure. ``state`` is the workspace state folded up to and including ``commit``;
statuses and what a proposal rests on come from the reducer's interface (the current reducer unless another
is named). Nobody is told about everything: the planner hears about proposals that now require
revalidation and about changed evidence under its hypotheses; the verifier about claims to check; the
specialists of a kind about open requests of that kind; the reporter about status changes and late
counterevidence (an observation arriving after the workspace closed that bears on its conclusion, ADR 0165),
which the planner hears about again when the workspace is reopened; the handoff deliverer about a commit that
hands the workspace to a person; snapshot subscribers get one coalescible notice
per commit, history consumers every commit (docs/adr/0010).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from caseboard.dispatcher.notification import Notification, notification_id, queue_of
from caseboard.domain import items as it
from caseboard.domain.commit import Commit
from caseboard.reducers import Reducer, WorkspaceState, get_reducer

CHECK_SUFFIX = "_check"
"""A work request whose kind ends so is an external check a verifier can cite."""

TURN_AUDIENCES = ("planner", "verifier", "reporter")
"""A principal a cycle schedules is told its turn when its name starts with one of these (``planner-1``)."""
HANDOFF_STATUSES = frozenset(
    {"human_review_required", "budget_exhausted", "evidence_incomplete", "supported_conclusion"}
)
"""A commit that moves a workspace into one of these hands it to a person (caseboard/handoff, docs/pilot.md)."""
LATE_COUNTEREVIDENCE = "late_counterevidence"
"""So does a late arrival the coordinator found bearing on a closed conclusion (its decision's ``bears_on``)."""


def handoff_trigger(commit: Commit) -> str | None:
    """The status a commit hands its workspace to a person with (a status item, or an escalation the
    coordinator decided), ``late_counterevidence`` for a late arrival the coordinator found bearing on a closed
    conclusion, else None. ``caseboard handoffs`` lists the commits for which this is not None."""
    trigger = None
    for item, decision in zip(commit.items, commit.decisions, strict=True):
        if decision.get("late_arrival") and decision.get("bears_on"):
            trigger = LATE_COUNTEREVIDENCE
        if isinstance(item, it.StatusChange) and item.to.value in HANDOFF_STATUSES:
            trigger = item.to.value
        escalation = decision.get("escalated")
        if escalation and escalation["to"] in HANDOFF_STATUSES:
            trigger = escalation["to"]
    return trigger


def turn_audience(principal: str) -> str | None:
    """The audience of ``principal``'s turn notification, None for a principal a cycle tells nothing (a specialist
    acts on the work requests of its kind)."""
    audience = principal.split("-", 1)[0]
    return audience if audience in TURN_AUDIENCES else None


def turn_notice(workspace_id: str, version: int, principal: str) -> tuple[str, str] | None:
    """The queue and the id of the turn notification the cycle committed at ``version`` gives ``principal``."""
    audience = turn_audience(principal)
    if audience is None:
        return None
    return queue_of(audience), notification_id(workspace_id, version, "turn", principal)


def route(commit: Commit, state: WorkspaceState, reducer: Reducer[WorkspaceState] | None = None) -> list[Notification]:
    reducer = reducer or get_reducer()
    out: dict[str, Notification] = {}
    version, ws = commit.version, commit.key  # the key: a notification names the workspace inside caseboard

    def add(kind: str, audience: str, subject: str | None = None, **fields: object) -> None:
        nid = notification_id(ws, version, kind if audience != "history" else "commit", subject)
        previous = out.get(nid)
        if previous is not None and "evidence_revisions" in fields:
            merged = {**previous.evidence_revisions, **fields["evidence_revisions"]}  # type: ignore[dict-item]
            fields["evidence_revisions"] = dict(sorted(merged.items()))
        out[nid] = Notification.model_validate(
            {
                "id": nid,
                "kind": kind,
                "audience": audience,
                "workspace_id": ws,
                "workspace_version": version,
                "subject": subject,
                **fields,
            }
        )

    for item, decision in zip(commit.items, commit.decisions, strict=True):
        match item:
            case it.Hypothesis() if item.supporting_evidence:
                _claim_to_check(add, state, reducer, item.id)
            case it.Link():
                add(
                    "evidence_changed",
                    "planner",
                    item.hypothesis,
                    evidence_revisions=_revisions(state, [item.observation]),
                )
                if item.relation == "supports":
                    _claim_to_check(add, state, reducer, item.hypothesis)
            case it.Verification():
                add("evidence_changed", "planner", item.claim, evidence_revisions={item.claim: version})
            case it.WorkRequest():
                add("work_requested", "specialist", item.request_id, request_kind=item.kind)
            case it.WorkReclaim():
                request = state.work[item.request_id]
                add("work_requested", "specialist", item.request_id, request_kind=request.kind)
            case it.WorkResult() if item.status == "completed":
                if state.work[item.request_id].kind.endswith(CHECK_SUFFIX):
                    for hyp_id in state.hypotheses:
                        _claim_to_check(add, state, reducer, hyp_id)
            case it.Cycle():
                for principal in item.scheduled:
                    audience = turn_audience(principal)
                    if audience is not None:
                        add("turn", audience, principal, principal=principal)
            case it.StatusChange():
                add("status_changed", "reporter", item.to.value)
            case it.Reopen():
                for rec in reducer.late_counterevidence(state):  # shown to the planner once work resumes
                    if rec.kind == "hypothesis":
                        add(
                            "evidence_changed",
                            "planner",
                            rec.bears_on,
                            evidence_revisions=_revisions(state, [rec.observation]),
                        )
            case _:
                pass
        escalation = decision.get("escalated")
        if escalation:
            add("status_changed", "reporter", escalation["to"])
    for proposal in state.proposals.values():
        if reducer.proposal_status(state, proposal, commit.at) != "requires_revalidation":
            continue
        closure = reducer.rests_on(state, proposal)
        touched = [ref for ref in closure if state.material.get(ref, 0) == version]
        if proposal.version == version or touched or state.constraints_version == version:
            add(
                "proposal_requires_revalidation",
                "planner",
                proposal.id,
                based_on_version=proposal.checked_at,
                evidence_revisions={ref: state.material[ref] for ref in sorted(set(closure)) if ref in state.material},
            )
    for rec in reducer.late_counterevidence(state):
        if rec.version == version:
            add(
                LATE_COUNTEREVIDENCE,
                "reporter",
                rec.observation,
                evidence_revisions=_revisions(state, [rec.observation]),
            )
    trigger = handoff_trigger(commit)
    if trigger is not None:
        add("handoff", "handoff", trigger)
    add("snapshot_changed", "snapshot")
    add("commit", "history")
    return list(out.values())


def _claim_to_check(
    add: Callable[..., None], state: WorkspaceState, reducer: Reducer[WorkspaceState], hyp_id: str
) -> None:
    hyp = state.hypotheses[hyp_id]
    if reducer.hypothesis_status(state, hyp) in ("confirmed", "refuted") or not hyp.supporting:
        return
    add(
        "claim_to_check",
        "verifier",
        hyp_id,
        evidence_revisions=_revisions(state, [*hyp.supporting, *hyp.challenging]),
    )


def _revisions(state: WorkspaceState, refs: Iterable[str]) -> dict[str, int]:
    revisions = {}
    for ref in refs:
        obs = state.observations.get(ref)
        if obs is not None:
            revisions[ref] = obs.version
    return dict(sorted(revisions.items()))


def coalesce(notifications: Iterable[Notification]) -> list[Notification]:
    """Keeps every notification except snapshot notices superseded by a later one for the same workspace."""
    batch = list(notifications)
    latest = {n.workspace_id: i for i, n in enumerate(batch) if n.coalesces}
    return [n for i, n in enumerate(batch) if not n.coalesces or latest[n.workspace_id] == i]


def handoffs_first(notifications: Iterable[Notification]) -> list[Notification]:
    """The order of sending: handoffs before the rest (a person waits on them), every queue's own order kept."""
    return sorted(notifications, key=lambda n: n.audience != "handoff")
