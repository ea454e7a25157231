"""Deciding a contribution: a pure function from (state, contribution, time) to the commit to append.

``decide`` reads the state, never writes it. It checks the envelope (workspace, idempotency, expected
version, closed workspace), then each item in order on a fork of the state, so that an item may refer to
what an earlier item of the same contribution created. The fork is taken only when an item has to be
applied for a later check: a contribution of one item (other than a proposal, whose recorded status is
read after applying it) is checked on the state itself. It returns the ``Commit`` for version
``state.version + 1``, a ``Replayed`` outcome for an idempotent retry, or raises ``Refusal``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from caseboard.coordinator.item_rules import Citations, OverLimit, Unresolved, check_item, held

__all__ = ["Behind", "Citations", "Replayed", "Unresolved", "decide"]
from caseboard.domain.commit import MAX_COMMIT_BYTES, Commit
from caseboard.domain.contribution import Contribution
from caseboard.domain.errors import CaseboardError, Reason, Refusal
from caseboard.domain.injection import suspicious_text
from caseboard.domain.outcome import Accepted
from caseboard.reducers import Reducer, WorkspaceState, get_reducer

LATE_ARRIVAL_TYPES = frozenset({"observation", "work_result"})
WHILE_CLOSED = LATE_ARRIVAL_TYPES | {"reopen", "promote", "retire"}  # knowledge is promoted after the incident


@dataclass(frozen=True)
class Replayed:
    """An idempotent retry: the original outcome, nothing appended."""

    outcome: Accepted


class Behind(CaseboardError):
    """expected_version is behind the state; the caller turns this into a VersionConflict with a summary."""

    def __init__(self, expected: int, current: int) -> None:
        super().__init__(f"expected {expected}, current {current}")
        self.expected = expected
        self.current = current


def decide(
    state: WorkspaceState,
    contribution: Contribution,
    at: datetime,
    reducer: Reducer[WorkspaceState] | None = None,
    citations: Citations | None = None,
    tenant_id: str | None = None,
    record: bool = False,
) -> Commit | Replayed:
    """``reducer`` is the one that folded ``state`` (the current one by default): its rules decide statuses.
    ``citations``: what the artifact store holds for each cited evidence_ref, resolved by the caller; an item
    that cites without them raises ``Unresolved`` (a ``Refusal``). ``tenant_id``: the tenant whose namespace
    the workspace's key is in (``caseboard.domain.workspace_key``), sealed in a schema 2 commit; None for a
    workspace of the legacy namespace, whose commits stay schema 1. ``record``: the state is an imported record
    (``Workspaces.is_record``): nothing but an operator's ``reopen`` is recorded on it (docs/adr/0158)."""
    reducer = reducer or get_reducer()
    _check_workspace(state, contribution)
    digest = None
    if contribution.idempotency_key is not None:
        digest = contribution.content_digest()
        slot = reducer.idempotency_slot(contribution.author.principal, contribution.idempotency_key)
        previous = state.idempotency.get(slot)
        if previous is not None:
            if previous.digest != digest:
                raise Refusal(
                    Reason.IDEMPOTENCY_MISMATCH,
                    f"idempotency_key {contribution.idempotency_key!r} was used at version {previous.version} "
                    "for other content; use a new key for new content",
                    field="idempotency_key",
                )
            return Replayed(Accepted.replayed(previous.version, previous.items))
    _check_expected_version(state, contribution)
    if record:
        for index, item in enumerate(contribution.items):
            if item.type != "reopen":
                raise Refusal(
                    Reason.WORKSPACE_CLOSED,
                    f"workspace {state.workspace_id!r} is an imported record (version {state.version}): replay, "
                    f"report, compare and read it; a {item.type!r} item cannot be recorded until an operator "
                    "reopens it (a 'reopen' item with an owner and a new budget)",
                    field=f"items[{index}]",
                )
    elif state.status == "closed":
        for index, item in enumerate(contribution.items):
            if item.type not in WHILE_CLOSED:
                raise Refusal(
                    Reason.WORKSPACE_CLOSED,
                    f"workspace {state.workspace_id!r} is closed: a {item.type!r} item cannot be recorded; "
                    "an operator may reopen it (a 'reopen' item with an owner and a new budget)",
                    field=f"items[{index}]",
                )
    envelope: dict[str, Any] = {
        "schema_version": 1 if tenant_id is None else 2,
        "workspace_id": state.workspace_id,
        "tenant_id": tenant_id,
        "version": state.version + 1,
        "at": at,
        "author": contribution.author,
        "expected_version": contribution.expected_version,
        "idempotency_key": contribution.idempotency_key,
        "digest": digest,
        "previous_hash": state.head_hash,
    }
    draft = state  # forked at the first item applied to it, with the commit it would be applied from
    draft_commit = None
    decisions: list[dict[str, Any]] = []
    over: list[OverLimit] = []
    last = len(contribution.items) - 1
    for index, item in enumerate(contribution.items):
        try:
            decision = check_item(draft, contribution, item, f"items[{index}]", at, reducer, citations, record)
        except OverLimit as overflow:  # held, so that the other items land (rule 9, ADR 0168)
            over.append(overflow)
            decision = held(draft, item, overflow)
        if index < last or item.type == "proposal":  # what no later check reads need not be applied
            if draft_commit is None:
                draft, draft_commit = state.fork(), Commit(items=(), decisions=(), **envelope)
            reducer.apply_item(draft, draft_commit, item, decision)
        if item.type == "proposal" and "held" not in decision:
            decision["recorded_status"] = reducer.proposal_status(draft, draft.proposals[item.id], at)
        suspicious = suspicious_text(item)
        if suspicious:
            decision["suspicious"] = suspicious
        decisions.append(decision)
    if over and len(over) == len(contribution.items):
        raise over[0]  # nothing else would land: the submitter keeps it all and is told, as before
    commit = Commit.new_sealed(items=contribution.items, decisions=tuple(decisions), **envelope)
    if len(commit.stored_json) > MAX_COMMIT_BYTES:  # only a contribution made in process can come near (ADR 0193)
        message = (
            f"the commit would be {len(commit.stored_json)} bytes; at most {MAX_COMMIT_BYTES}: "
            "large material lives behind evidence_ref"
        )
        raise Refusal(Reason.INVALID, message, field="items")
    return commit


def _check_workspace(state: WorkspaceState, contribution: Contribution) -> None:
    opens = [i for i, item in enumerate(contribution.items) if item.type == "open"]
    if state.opened:
        if opens:
            raise Refusal(
                Reason.WORKSPACE_EXISTS,
                f"workspace {state.workspace_id!r} is already open (version {state.version}); "
                "choose another workspace id",
                field=f"items[{opens[0]}]",
            )
        return
    if not opens:
        raise Refusal(
            Reason.UNKNOWN_WORKSPACE,
            f"unknown workspace {state.workspace_id!r}: it must be opened first by an operator's 'open' item",
            field="workspace_id",
        )
    if len(contribution.items) != 1:
        raise Refusal(
            Reason.INVALID,
            "the contribution that opens a workspace carries the 'open' item alone",
            field="items",
        )


def _check_expected_version(state: WorkspaceState, contribution: Contribution) -> None:
    expected = contribution.expected_version
    if expected is None:
        return
    if expected < state.version:
        raise Behind(expected, state.version)
    if expected > state.version:
        raise Refusal(
            Reason.EXPECTED_VERSION_AHEAD,
            f"expected_version {expected} is ahead of the workspace, which is at version {state.version}; "
            "this writer is reading another ledger or has a bug",
            field="expected_version",
            current_version=state.version,
        )
