"""One notification to completion, with every model call recorded in the ledger.

``take_turn`` asks the participant to decide, submits the reply's items with the judgment of the call that
produced them and ``expected_version`` set to the version the model was shown, and repeats while the
participant has a next step (a specialist claims, then reports). Then:

    accepted               the items and their judgment landed in one commit
    version_conflict       the reply is stale: it is never submitted as if current. The participant reads
                           what changed and decides again (a new call), at most ``max_attempts`` times; the
                           superseded call's judgment rides in the next contribution, marked superseded. A
                           turn that loses every race records the superseded judgments alone and raises
                           ``RetryBudgetSpent``, as ``workers/runtime.act`` does: the host hands the notification
                           back to the broker, which delivers it again later (the consumer's attempt budget
                           bounds how often; docs/adr/0196)
    any other refusal      (forbidden, invalid, unknown_reference, ...) or a reply refused before submitting
                           (malformed, model unavailable): the judgment alone is recorded, with the refusal,
                           and the participant goes on to its next notification

A judgment recorded alone carries no ``expected_version``: it is bookkeeping about what the model was shown
(its ``input_workspace_version``), not a claim on the current state.
"""

from __future__ import annotations

from typing import Any, Protocol

import structlog

from caseboard.agent.participant import Decision, refused
from caseboard.dispatcher.notification import Notification
from caseboard.domain.errors import Reason
from caseboard.domain.items import Role
from caseboard.domain.outcome import Accepted, Outcome, Refused
from caseboard.domain.workspace_key import bare
from caseboard.workers.runtime import RetryBudgetSpent

log = structlog.get_logger("caseboard.agent")

MAX_STEPS = 4
MAX_ATTEMPTS = 5
RECORDED = ("reason", "message", "field", "current_version")
"""What a judgment records of the refusal of its reply (those the refusal has)."""


class Deciding(Protocol):
    principal: str
    role: Role

    def decide(self, notification: Notification, *, superseded: int | None = None) -> Decision | None:
        """One call for ``notification``; ``superseded``: the version the previous, stale answer was made on."""
        ...


class Submitting(Protocol):
    def submit(self, body: dict[str, Any], key: str | None = None) -> Outcome: ...


def take_turn(
    board: Submitting, participant: Deciding, notification: Notification, *, max_attempts: int = MAX_ATTEMPTS
) -> list[Outcome]:
    """Runs ``participant`` on ``notification``; returns every outcome the coordinator gave."""
    outcomes: list[Outcome] = []
    superseded: list[dict[str, Any]] = []

    def submit(items: list[dict[str, Any]], expected: int | None) -> Outcome:
        body: dict[str, Any] = {
            "workspace_id": bare(notification.workspace_id),  # a notification names the key
            "author": {"principal": participant.principal, "role": participant.role.value},
            "idempotency_key": f"{participant.principal}/{items[-1]['invocation_id']}",
            "items": items,
        }
        if expected is not None:
            body["expected_version"] = expected
        outcome = board.submit(body, notification.workspace_id)
        outcomes.append(outcome)
        return outcome

    def record_alone(judgments: list[dict[str, Any]]) -> None:
        if not judgments:
            return
        outcome = submit(judgments, None)
        if isinstance(outcome, Refused):
            log.error(
                "judgment_not_recorded",
                principal=participant.principal,
                notification_id=notification.id,
                reason=outcome.reason.value,
                message=outcome.message,
            )

    for _ in range(min(MAX_STEPS, getattr(participant, "max_steps", MAX_STEPS))):
        conflicts = 0
        stale_at: int | None = None
        while True:
            decision = participant.decide(notification, superseded=stale_at)
            if decision is None:
                record_alone(superseded)
                return outcomes
            if decision.refusal is not None:
                _log_refusal(participant, notification, decision.refusal)
                record_alone([*superseded, decision.judgment])
                return outcomes
            outcome = submit([*superseded, *decision.items, decision.judgment], decision.version)
            if isinstance(outcome, Accepted):
                superseded = []
                log.info(
                    "agent_contributed",
                    principal=participant.principal,
                    notification_id=notification.id,
                    workspace_version=outcome.workspace_version,
                    shown_version=decision.version,
                )
                break
            answer = outcome.as_json()
            refusal: dict[str, Any] = {k: answer[k] for k in RECORDED if k in answer}
            if outcome.reason == Reason.VERSION_CONFLICT:
                conflicts += 1
                stale_at = decision.version
                superseded.append(refused(decision.judgment, {**refusal, "superseded": True}))
                log.info(
                    "agent_conflict",
                    principal=participant.principal,
                    notification_id=notification.id,
                    shown_version=decision.version,
                    current_version=outcome.details.get("current_version"),
                    attempt=conflicts,
                )
                if conflicts >= max_attempts:
                    record_alone(superseded)
                    current = int(outcome.details.get("current_version", decision.version))
                    raise RetryBudgetSpent(participant.principal, notification.id, conflicts, current)
                continue
            _log_refusal(participant, notification, refusal)
            record_alone([*superseded, refused(decision.judgment, refusal)])
            return outcomes
    return outcomes


def _log_refusal(participant: Deciding, notification: Notification, refusal: dict[str, Any]) -> None:
    quiet = refusal["reason"] == "nothing_to_contribute"  # an empty answer is an answer, not a fault
    (log.info if quiet else log.warning)(
        "agent_reply_refused",
        principal=participant.principal,
        notification_id=notification.id,
        reason=refusal["reason"],
        message=refusal.get("message"),
    )
