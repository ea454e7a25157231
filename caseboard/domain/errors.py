"""What can go wrong, as data.

    CaseboardError                      root of everything caseboard raises on purpose
    ├── Refused                         a contribution the coordinator will not commit (carries a reason token)
    │   └── VersionConflict             expected_version is behind; carries current_version and a summary
    ├── UnknownWorkspace                a workspace id the ledger has never opened
    ├── VersionOutOfRange               a version beyond the head (or below 1) was asked for
    ├── UnknownReducer                  a reducer version that is not registered
    ├── LedgerUnavailable               the store could not be reached or refused to work
    └── ConfigurationError              a setting that cannot be honoured

A refusal is not a failure of caseboard: it is the coordinator's answer, returned to the caller as
``{"ok": false, "reason": ..., "message": ...}``. The reason tokens below are a public contract.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Reason(StrEnum):
    """Stable machine words for refusals (DESIGN.md §3)."""

    VERSION_CONFLICT = "version_conflict"
    EXPECTED_VERSION_AHEAD = "expected_version_ahead"
    FENCED = "fenced"
    LEASE_HELD = "lease_held"
    FORBIDDEN = "forbidden"
    INVALID = "invalid"
    UNKNOWN_REFERENCE = "unknown_reference"
    DUPLICATE_ID = "duplicate_id"
    IDEMPOTENCY_MISMATCH = "idempotency_mismatch"
    WORKSPACE_CLOSED = "workspace_closed"
    LIMIT_EXCEEDED = "limit_exceeded"
    UNKNOWN_WORKSPACE = "unknown_workspace"
    WORKSPACE_EXISTS = "workspace_exists"


class CaseboardError(Exception):
    """Root of every error caseboard raises on purpose."""


class Refused(CaseboardError):
    """The coordinator will not commit a contribution. Nothing was appended."""

    def __init__(self, reason: Reason, message: str, *, field: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.field = field
        self.details = details

    def to_outcome(self) -> dict[str, Any]:
        outcome: dict[str, Any] = {"ok": False, "reason": self.reason.value, "message": self.message}
        if self.field is not None:
            outcome["field"] = self.field
        outcome.update(self.details)
        return outcome


class VersionConflict(Refused):
    """The writer's expected_version is behind the workspace."""

    def __init__(self, expected: int, current: int, since: list[dict[str, Any]]) -> None:
        super().__init__(
            Reason.VERSION_CONFLICT,
            f"expected_version {expected} is behind: the workspace is at version {current}; "
            "re-read the commits since and decide again",
            field="expected_version",
            current_version=current,
            since=since,
        )
        self.expected = expected
        self.current = current


class UnknownWorkspace(CaseboardError):
    def __init__(self, workspace_id: str) -> None:
        super().__init__(f"unknown workspace {workspace_id!r}: open it first (an operator's 'open' item)")
        self.workspace_id = workspace_id


class VersionOutOfRange(CaseboardError):
    def __init__(self, workspace_id: str, asked: int, head: int) -> None:
        super().__init__(f"workspace {workspace_id!r} has versions 1..{head}; version {asked} does not exist")
        self.asked = asked
        self.head = head


class UnknownReducer(CaseboardError):
    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"unknown reducer {name!r}; known reducers: {', '.join(known)}")


class LedgerUnavailable(CaseboardError):
    """The ledger's store failed (connection refused, disk full, ...)."""


class ConfigurationError(CaseboardError):
    """A setting that cannot be honoured."""
