"""The worker runtime: a participant gets a notification and a bounded view, and returns what to contribute.

``act`` drives one participant on one notification: read the view, ask for items, submit them with the
view's version as ``expected_version``; on ``version_conflict`` re-read and re-decide, at most
``max_attempts`` times, then raise ``RetryBudgetSpent``: the host hands the notification back to the broker,
which delivers it again ``RETRY_DELAY_MS`` later (docs/adr/0196). A participant may take several steps (claim,
then report); each step is keyed by the notification and its content, so a redelivered notification replays
what already landed instead of doing it twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from caseboard.coordinator.service import Coordinator
from caseboard.dispatcher.notification import Notification
from caseboard.domain.contribution import Author, Contribution
from caseboard.domain.errors import CaseboardError, Reason
from caseboard.domain.items import Role
from caseboard.domain.outcome import Accepted, Refused
from caseboard.domain.workspace_key import bare

log = structlog.get_logger("caseboard.workers")

View = dict[str, Any]
VIEW_LIST_LIMIT = 50
MAX_STEPS = 4
RETRY_DELAY_MS = 500
"""A notification whose participant lost every race is delivered again at least this late (``dramatiq.Retry``),
once the writers it raced have committed; the consumer's attempt budget bounds how often."""


class Participant(Protocol):
    principal: str
    role: Role

    def contribute(self, notification: Notification, view: View) -> list[dict[str, Any]] | None:
        """The items to submit next, or None when there is nothing (more) to do."""
        ...


class RetryBudgetSpent(CaseboardError):
    """A participant lost the compare-and-set race more times than its budget allows."""

    def __init__(self, principal: str, notification_id: str, attempts: int, current_version: int) -> None:
        super().__init__(
            f"{principal} lost {attempts} compare-and-set races in a row on {notification_id} "
            f"(the workspace is at version {current_version})"
        )
        self.principal = principal
        self.notification_id = notification_id
        self.attempts = attempts
        self.current_version = current_version


class ContributionRefused(CaseboardError):
    def __init__(self, principal: str, outcome: Refused) -> None:
        super().__init__(f"{principal}'s contribution was refused: {outcome.reason.value}: {outcome.message}")
        self.outcome = outcome


def bounded_view(projection: dict[str, Any], limit: int = VIEW_LIST_LIMIT) -> View:
    """The projection with every top-level list cut to ``limit`` entries (a participant's input budget)."""
    return {k: (v[:limit] if isinstance(v, list) else v) for k, v in projection.items()}


def superseded(notification: Notification, view: View) -> bool:
    """An announcement that something is stale is a no-op once its target moved past the announced basis."""
    if notification.kind != "proposal_requires_revalidation" or notification.based_on_version is None:
        return False
    for record in view.get("proposal_records", []):
        if record["id"] == notification.subject:
            return bool(record["last_checked_against_version"] > notification.based_on_version)
    return False


def act(
    coordinator: Coordinator,
    participant: Participant,
    notification: Notification,
    *,
    max_attempts: int = 5,
    read: Callable[[str], View] | None = None,
) -> list[Accepted]:
    """Runs ``participant`` on ``notification`` to completion; returns the accepted outcomes."""
    read = read or (lambda ws: bounded_view(coordinator.workspaces.show(ws)))
    outcomes: list[Accepted] = []
    conflicts = 0
    if superseded(notification, read(notification.workspace_id)):
        log.info("notification_stale", principal=participant.principal, notification_id=notification.id)
        return outcomes
    for _ in range(MAX_STEPS + max_attempts):
        view = read(notification.workspace_id)
        items = participant.contribute(notification, view)
        if not items:
            return outcomes
        digest = hashlib.sha256(json.dumps(items, sort_keys=True).encode()).hexdigest()[:16]
        contribution = Contribution.model_validate(
            {
                "workspace_id": bare(notification.workspace_id),  # a notification names the key
                "author": Author(principal=participant.principal, role=participant.role),
                "expected_version": view["workspace_version"],
                "idempotency_key": f"{participant.principal}/{notification.id}/{digest}",
                "items": items,
            }
        )
        outcome = coordinator.submit(contribution, notification.workspace_id)
        if isinstance(outcome, Accepted):
            outcomes.append(outcome)
            log.info(
                "participant_contributed",
                principal=participant.principal,
                notification_id=notification.id,
                workspace_version=outcome.workspace_version,
                replay=outcome.idempotent_replay,
                held=[entry["ref"] for entry in outcome.get("held", ())],  # landed without them (ADR 0168)
            )
            if len(outcomes) >= MAX_STEPS:
                return outcomes
            continue
        if outcome.reason == Reason.VERSION_CONFLICT:
            conflicts += 1
            current = outcome.details["current_version"]
            log.info(
                "participant_conflict",
                principal=participant.principal,
                notification_id=notification.id,
                current_version=current,
                attempt=conflicts,
            )
            if conflicts >= max_attempts:
                raise RetryBudgetSpent(participant.principal, notification.id, conflicts, current)
            continue
        raise ContributionRefused(participant.principal, outcome)
    return outcomes
