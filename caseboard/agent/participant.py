"""``ModelParticipant``: what one model call decides, and the judgment that records it.

``decide(notification)`` reads the workspace (the bounded model-facing view of its role, judged now), asks
the code, not the model, whether the notification is this participant's to act on (``task``), checks the
workspace's model budget, sends the role's prompt with the view and the task, and turns the reply into
typed items. The judgment it returns names the invocation, the prompt's SHA-256 (the exact bytes are kept
in the artifact store), the version shown and the evidence revisions quoted, and in its output the reply,
the token usage, the latency and the attempts. A reply that is not a JSON object with an ``items`` list, or
that carries its own ``judgment`` items, is refused here; every other rule is the coordinator's.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from caseboard.agent.board import Board, Reading
from caseboard.agent.budget import Budget, clamped
from caseboard.agent.budget import spent as budget_spent
from caseboard.agent.model import ModelClient, ModelUnavailable
from caseboard.agent.prompts import Prompt, load_prompt
from caseboard.dispatcher.notification import Notification
from caseboard.domain.items import MAX_REFS, Role
from caseboard.domain.principals import same_principal
from caseboard.projections.model_view import judgment_basis

log = structlog.get_logger("caseboard.agent")

VIEW_BUDGET_CHARS = 12_000
MAX_REPLY_TOKENS = 1024
RAW_CHARS = 2000
"""A reply that cannot be used is recorded up to this many characters."""
REPLY_CHARS = 48_000
"""A parsed reply larger than this (as JSON) is recorded by its SHA-256 only, within the judgment's bound."""
NO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
"""The usage of a call the model never answered."""
SHOWN_ITEMS = frozenset({"observation", "hypothesis", "proposal", "work", "question"})
"""The kinds of view entries that are items of the workspace, by their ids: a judgment records the revision
(``recorded_at_version``) of each one the model was shown, check results and questions as well as observations
(issue 33, rule 7). Answers and reviews are shown under their question's and proposal's ids' entries."""


@dataclass(frozen=True)
class Decision:
    version: int
    """The workspace version the model was shown: the contribution's ``expected_version``."""
    items: list[dict[str, Any]]
    judgment: dict[str, Any]
    refusal: dict[str, Any] | None = None
    """Why the reply contributes nothing, when the participant refused it before submitting."""


def refused(judgment: dict[str, Any], refusal: dict[str, Any]) -> dict[str, Any]:
    """``judgment`` recording that its reply contributed nothing, and why."""
    return {**judgment, "output": {**judgment["output"], "contributed": False, "refusal": refusal}}


def canonical(messages: list[dict[str, str]]) -> bytes:
    """The exact bytes whose SHA-256 a judgment records: the messages as compact, key-sorted UTF-8 JSON."""
    return json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _invocation_id() -> str:
    return f"inv-{uuid.uuid4().hex[:20]}"


@dataclass
class ModelParticipant:
    principal: str
    role: Role
    model: ModelClient
    board: Board
    budget: Budget
    kinds: tuple[str, ...] = ()
    """A specialist's request kinds (empty: every kind)."""
    budget_chars: int = VIEW_BUDGET_CHARS
    max_tokens: int = MAX_REPLY_TOKENS
    invocation_ids: Callable[[], str] = _invocation_id
    workspaces: frozenset[str] = frozenset()
    """Only these workspaces (empty: every one)."""
    checks: Mapping[str, str] = field(default_factory=dict)
    """A planner's view of what each tenant's diagnostic sources can check (``sources/catalog.py``)."""
    prompt: Prompt = field(init=False)

    def __post_init__(self) -> None:
        self.prompt = load_prompt(self.role.value, self.principal, self.kinds)

    @property
    def max_steps(self) -> int:
        """Calls per notification: a specialist claims, then reports; the others answer once."""
        return 2 if self.role is Role.SPECIALIST else 1

    def task(self, notification: Notification, projection: dict[str, Any]) -> str | None:
        """What this notification asks of this participant, in words the code chose; None: nothing."""
        if projection["status"] != "investigating" and self.role is not Role.REPORTER:
            return None
        version = projection["workspace_version"]
        head = f"Your task (from caseboard, not from the data above): notification {notification.kind}"
        about = f" about {notification.subject}" if notification.subject else ""
        if self.role is Role.SPECIALIST:
            return self._specialist_task(notification, projection, head)
        if self.role is Role.VERIFIER:
            if notification.kind not in ("claim_to_check", "turn"):
                return None
            return (
                f"{head}{about}. Check the claims you did not author against completed checks, as of version "
                f"{version}; reply with an empty items list when no completed check settles a claim."
            )
        if self.role is Role.REPORTER:
            if notification.kind == "late_counterevidence":  # ADR 0165: a summary of it is not a source
                return (
                    f"{head}{about}. It arrived after the workspace closed and bears on its conclusion (see "
                    f"late_counterevidence); summarize what it bears on as of version {version}, for a person to weigh."
                )
            if notification.kind not in ("status_changed", "turn"):
                return None
            return f"{head}{about}. Summarize what the workspace established as of version {version}."
        if notification.kind not in ("turn", "proposal_requires_revalidation"):
            return None  # changed evidence is weighed at the planner's next turn, which the controller schedules
        if notification.kind == "turn" and notification.principal not in (None, self.principal):
            return None
        checks = self.checks.get(projection.get("scope", {}).get("tenant_id", ""))
        offered = (
            f" The diagnostic sources can run work requests of these kinds (kind (source: operations)): {checks};"
            " a request's target is plain text or a JSON object naming the operation and its parameters."
            if checks
            else ""
        )
        return (
            f"{head}{about}. Plan the next step of the investigation as of version {version}; a proposal's "
            f"based_on_workspace_version is {version}.{offered}"
        )

    def _specialist_task(self, notification: Notification, projection: dict[str, Any], head: str) -> str | None:
        if notification.kind != "work_requested" or notification.subject is None:
            return None
        work = next((w for w in projection["work"] if w["request_id"] == notification.subject), None)
        if work is None or (self.kinds and work["kind"] not in self.kinds):
            return None
        what = f"request {work['request_id']} (kind {work['kind']}; target {json.dumps(work['target'])})"
        if work["status"] == "awaiting_result":
            return f"{head}. {what} is awaiting_result: claim it if it is of your kind."
        if work["status"] == "claimed" and same_principal(work["holder"], self.principal):
            return (
                f"{head}. You hold {what} at generation {work['generation']}: report its work_result with "
                f"generation {work['generation']}."
            )
        return None

    def contribute(self, notification: Notification, view: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The worker runtime's protocol (caseboard.workers.runtime): the whole turn is taken here, through
        ``take_turn``, so that a refused or superseded reply's judgment is recorded too; nothing is left for
        the runtime to submit."""
        from caseboard.agent.turn import take_turn

        take_turn(self.board, self, notification)
        return None

    def decide(self, notification: Notification, *, superseded: int | None = None) -> Decision | None:
        """One model call for ``notification``, or None when there is nothing to ask (or no budget left)."""
        if self.workspaces and notification.workspace_id not in self.workspaces:
            return None
        reading = self.board.read(notification.workspace_id, self.role, self.budget_chars)
        task = self.task(notification, reading.projection)
        if task is not None and superseded is not None:
            task += (
                f" Your previous answer was made on version {superseded} and was not recorded as current: the "
                f"workspace has moved on to version {reading.projection['workspace_version']}; decide again on "
                "the view above."
            )
        if task is None:
            return None
        cycles = int(reading.projection["runtime_limits"]["max_investigation_cycles"])
        spent = budget_spent(reading.commits, self.budget.principals | {self.principal})
        left = self.budget.left(cycles, spent)
        if left.calls < 1 or left.tokens < 1:
            log.warning(
                "model_budget_spent",
                principal=self.principal,
                workspace_id=notification.workspace_id,
                calls=spent.calls,
                tokens=spent.tokens,
                cycles=cycles,
            )
            return None
        return self.ask(notification, reading, task, min(self.max_tokens, left.tokens))

    def ask(self, notification: Notification, reading: Reading, task: str, max_tokens: int) -> Decision:
        view = reading.view
        messages = [
            {"role": "system", "content": self.prompt.system},
            {"role": "user", "content": f"{view.text}\n\n{task}"},
        ]
        data = canonical(messages)
        digest = hashlib.sha256(data).hexdigest()
        artifact = self.board.keep_prompt(reading.projection["scope"]["tenant_id"], data, self.principal)
        revisions = {e.ref: e.provenance.recorded_at_version for e in view.entries if e.kind in SHOWN_ITEMS}
        output: dict[str, Any] = {
            "prompt": self.prompt.name,
            "prompt_artifact": artifact,
            "notification": notification.id,
            **judgment_basis(view),
        }
        judgment: dict[str, Any] = {
            "type": "judgment",
            "invocation_id": self.invocation_ids(),
            "component": f"{self.prompt.name} {notification.kind}",
            "model": self.model.name,
            "prompt_sha256": digest,
            "input_workspace_version": view.built_from_version,
            "evidence_revisions": dict(list(revisions.items())[:MAX_REFS]),
            "output": output,
        }
        try:
            reply = self.model.complete(messages, max_tokens=max_tokens)
        except ModelUnavailable as error:
            output.update(usage=dict(NO_USAGE), latency_ms=error.latency_ms, attempts=len(error.errors))
            output["errors"] = list(error.errors)
            unavailable = {"reason": "model_unavailable", "message": str(error)}
            return Decision(view.built_from_version, [], refused(judgment, unavailable), unavailable)
        judgment["model"] = reply.model[:256] or self.model.name
        if reply.content is not None:  # the exact reply, by its SHA-256, beside the prompt (ADR 0152)
            tenant = reading.projection["scope"]["tenant_id"]
            output["reply_artifact"] = self.board.keep_reply(tenant, reply.content.encode("utf-8"), self.principal)
        usage = clamped(reply.usage, max_tokens, len(data))
        if usage != reply.usage:  # what the model claimed, kept beside what is charged
            output["usage_reported"] = {name: reply.usage.get(name) for name in usage}
        output.update(usage=usage, latency_ms=reply.latency_ms, attempts=reply.attempts)
        if reply.errors:
            output["errors"] = list(reply.errors)
        items, refusal = self.interpret(reply.content, output)
        if refusal is not None:
            return Decision(view.built_from_version, [], refused(judgment, refusal), refusal)
        output["contributed"] = True
        return Decision(view.built_from_version, items, judgment)

    def interpret(
        self, content: str | None, output: dict[str, Any]
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """The reply's items, or why there are none; records the reply in ``output``."""
        try:
            parsed = json.loads(content or "")
        except ValueError as error:
            output["raw"] = (content or "")[:RAW_CHARS]
            return [], {"reason": "malformed_reply", "message": f"the reply is not JSON: {error}"}
        text = json.dumps(parsed, separators=(",", ":"), ensure_ascii=False)
        if len(text) > REPLY_CHARS:
            output["reply_sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
            output["reply_chars"] = len(text)
        else:
            output["reply"] = parsed
        items = parsed.get("items") if isinstance(parsed, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            return [], {"reason": "malformed_reply", "message": 'the reply is not an object with an "items" list'}
        if any(i.get("type") == "judgment" for i in items):
            return [], {"reason": "forbidden", "message": "a reply may not carry judgments: caseboard records them"}
        if not items:
            return [], {"reason": "nothing_to_contribute", "message": "the reply's items list is empty"}
        return items, None
