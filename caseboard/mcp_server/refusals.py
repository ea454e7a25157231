"""A refusal as an agent reads it: the contract's body plus whether to retry and what to do next.

Every refusal an MCP tool or resource gives is ``{"ok": false, "reason", "message", "field",
"current_version" (where it applies), "retryable", "next_step"}``. ``NEXT_STEPS`` is the one table from a
reason token to those two answers; a test checks that it covers every ``Reason`` and the two tokens of the
transports (``unauthenticated``, ``unavailable``).
"""

from __future__ import annotations

from typing import Any

from caseboard.domain.errors import Reason

UNAUTHENTICATED = Reason.UNAUTHENTICATED.value
UNAVAILABLE = Reason.UNAVAILABLE.value

NEXT_STEPS: dict[str, tuple[bool, str]] = {
    Reason.VERSION_CONFLICT: (
        True,
        "re-read what changed with changes_since(after=<your expected_version>), decide again on the current "
        "state, and resubmit with expected_version = current_version",
    ),
    Reason.EXPECTED_VERSION_AHEAD: (
        False,
        "expected_version is beyond the workspace's head: read the workspace again (read_workspace) and use "
        "the version it shows",
    ),
    Reason.FENCED: (
        True,
        "your claim was superseded (reclaimed, released or its lease lapsed): claim the request again "
        "(a work_claim item) and report with the new generation",
    ),
    Reason.LEASE_HELD: (True, "another participant holds this request under a live lease: wait and list_work again"),
    Reason.FORBIDDEN: (False, "your role may not do this: do not retry; leave it to a role that may (see whoami)"),
    Reason.INVALID: (False, "fix the argument named by field and submit again"),
    Reason.UNKNOWN_REFERENCE: (
        False,
        "an id you referenced does not exist in the workspace: read_workspace to find the right id, then fix it",
    ),
    Reason.DUPLICATE_ID: (False, "that id is already used in the workspace: pick a new id and submit again"),
    Reason.IDEMPOTENCY_MISMATCH: (
        False,
        "this idempotency_key was used with other content: use a new idempotency_key for new content",
    ),
    Reason.WORKSPACE_CLOSED: (
        False,
        "the workspace is closed: late observations and results are still recorded; anything else needs an "
        "operator to reopen it",
    ),
    Reason.LIMIT_EXCEEDED: (
        False,
        "a runtime limit would be crossed: escalate to an operator (status human_review_required) rather than retry",
    ),
    Reason.UNKNOWN_WORKSPACE: (False, "no such workspace for your tenant: list_workspaces shows the ones you can see"),
    Reason.WORKSPACE_EXISTS: (False, "that workspace id is taken: open the workspace under another id"),
    UNAUTHENTICATED: (False, "the API key is missing, unknown or revoked: ask an operator for a valid key"),
    UNAVAILABLE: (True, "the ledger cannot be reached right now: retry in a second or two"),
    Reason.NOT_FOUND: (False, "no such route: the tools are whoami, list_workspaces, read_view and the others listed"),
    Reason.METHOD_NOT_ALLOWED: (False, "that method is not served there: call the tool as listed"),
    Reason.INTERNAL: (False, "an internal error, logged by the server: report it rather than retry the same call"),
}
"""reason token -> (retryable, next step)."""

REFUSAL_KEYS = ("ok", "reason", "message", "field", "current_version", "retryable", "next_step")


def structured(body: dict[str, Any]) -> dict[str, Any]:
    """A refusal body of the contract (``{"ok": false, "reason", "message", ...}``) with ``retryable`` and
    ``next_step`` added, and ``field`` always present (null when nothing names one)."""
    reason = str(body.get("reason", Reason.INVALID.value))
    retryable, next_step = NEXT_STEPS.get(reason, (False, "read the message, fix the request and try again"))
    refusal: dict[str, Any] = {
        **body,
        "ok": False,
        "reason": reason,
        "message": str(body.get("message", reason)),
        "field": body.get("field"),
        "retryable": retryable,
        "next_step": next_step,
    }
    return refusal


def refusal(reason: str, message: str, *, field: str | None = None, **details: Any) -> dict[str, Any]:
    return structured({"reason": reason, "message": message, "field": field, **details})
