"""What can go wrong, as data: one tree of errors, one enum of reason tokens.

Every error caseboard raises on purpose is a ``CaseboardError``; the tree below is complete
(tests/unit/test_error_tree.py checks it against every class in caseboard, both ways). Those defined outside
this module say where they live.

    CaseboardError                      root of everything caseboard raises on purpose
    ├── Refusal                         a contribution the coordinator will not commit (carries a reason token)
    │   ├── VersionConflict             expected_version is behind; carries current_version and a summary
    │   ├── Unresolved                  cites artifacts no store was consulted for (coordinator/item_rules.py)
    │   └── OverLimit                   a question, check or proposal over its limit (coordinator/item_rules.py)
    ├── Behind                          expected_version is behind the state, before the summary (coordinator/decide.py)
    ├── UnknownWorkspace                a workspace id the ledger has never opened
    ├── AmbiguousWorkspace              an operator named an id that several tenants have (docs/adr/0130)
    ├── VersionOutOfRange               a version beyond the head (or below 1) was asked for
    ├── UnknownReducer                  a reducer version that is not registered
    ├── LedgerUnavailable               the store could not be reached or refused to work
    ├── ConfigurationError              a setting that cannot be honoured
    ├── VersionTaken                    another writer appended the version first (ledger/base.py)
    ├── SnapshotRejected                a snapshot the chain does not vouch for (ledger/base.py)
    ├── BrokerUnavailable               the message broker cannot be reached (dispatcher/broker.py)
    ├── ApiError                        a refusal decided by the HTTP layer, with its status (api/errors.py)
    ├── Unauthenticated                 the server refused the client's key (client.py)
    ├── UnreadableRecord                a line or row that is not a commit of a known schema (replay/records.py)
    ├── BrokenRecord                    commits that cannot be folded in the order given (replay/rebuild.py)
    ├── DamagedIncident                 an incident file whose commits cannot be folded in order (replay/compare.py)
    ├── ImportRefused                   a recorded incident that will not be imported (replay/transfer.py)
    ├── ChainBroken                     the hash chain does not hold (replay/audit.py)
    ├── VersionNotRecorded              a version the record does not hold (replay/history.py)
    ├── RetryBudgetSpent                a participant lost more races than its budget allows (workers/runtime.py)
    ├── ContributionRefused             a worker's contribution was refused (workers/runtime.py)
    ├── ArtifactError                   the artifact store will not do it (evidence/model.py)
    │   ├── ArtifactNotFound            no such artifact in the tenant
    │   ├── ArtifactTooLarge            an upload over the size limit
    │   ├── ArtifactAltered             stored bytes that no longer hash to the artifact's id
    │   └── RangeOutside                an excerpt's range is outside the artifact
    ├── ModelUnavailable                a participant's model did not answer (agent/model.py)
    ├── SourceFailed                    a diagnostic source could not answer (sources/base.py)
    ├── BadRequest                      a work request a source cannot run as asked (sources/record.py)
    ├── Undelivered                     a webhook did not take a handoff; retried (handoff/deliver.py)
    └── CorpusError                     an evaluation corpus that cannot be read (evaluation/incident.py)

Inside the PostgreSQL ledger, three errors are the driver's own types on purpose, so that the driver's and
eventsourcing's handling applies to them; none leaves ``caseboard/ledger/``, which translates them into
``LedgerUnavailable``: ``NoAnswer`` and ``Unreachable`` (psycopg ``OperationalError``, ledger/libpq.py and
ledger/connections.py) and ``DatabaseUnreachable`` (eventsourcing ``PersistenceError``, ledger/connections.py).

A refusal is not a failure of caseboard: it is the coordinator's answer, returned to the caller as an
``outcome.Refused`` (``Refusal.outcome()``), whose JSON is ``{"ok": false, "reason": ..., "message": ...}``.
The reason tokens of ``Reason`` are a public contract: every reason caseboard puts in a body is one of them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from caseboard.domain import outcome as outcomes


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
    # the transports' own (HTTP, MCP, the client): who is asking, whether the server can answer
    UNAUTHENTICATED = "unauthenticated"
    UNAVAILABLE = "unavailable"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    INTERNAL = "internal"


class CaseboardError(Exception):
    """Root of every error caseboard raises on purpose."""


class Refusal(CaseboardError):
    """The coordinator will not commit a contribution. Nothing was appended."""

    def __init__(self, reason: Reason, message: str, *, field: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.field = field
        self.details = details

    def outcome(self) -> outcomes.Refused:
        """The coordinator's answer for this refusal."""
        return outcomes.Refused(self.reason, self.message, self.field, self.details)


class VersionConflict(Refusal):
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
        self.since = since
        """A summary of each commit after ``expected`` (the latest ones): what changed under the writer."""


class UnknownWorkspace(CaseboardError):
    def __init__(self, workspace_id: str) -> None:
        super().__init__(f"unknown workspace {workspace_id!r}: open it first (an operator's 'open' item)")
        self.workspace_id = workspace_id


class AmbiguousWorkspace(CaseboardError):
    """An operator named a workspace by its bare id, and several tenants have one of that id."""

    def __init__(self, workspace_id: str, tenants: list[str]) -> None:
        named = ", ".join(f"{tenant}/{workspace_id}" for tenant in tenants)
        super().__init__(f"several tenants have a workspace {workspace_id!r}: name one as TENANT/ID ({named})")
        self.workspace_id = workspace_id
        self.tenants = tenants


class VersionOutOfRange(CaseboardError):
    def __init__(self, workspace_id: str, asked: int, head: int) -> None:
        super().__init__(f"workspace {workspace_id!r} has versions 1..{head}; version {asked} does not exist")
        self.workspace_id = workspace_id
        self.asked = asked
        self.head = head


class UnknownReducer(CaseboardError):
    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"unknown reducer {name!r}; known reducers: {', '.join(known)}")


class LedgerUnavailable(CaseboardError):
    """The ledger's store failed (connection refused, disk full, ...)."""


class ConfigurationError(CaseboardError):
    """A setting that cannot be honoured."""
