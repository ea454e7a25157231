"""What a diagnostic source is: the read operations it declares, and one query run against a deadline.

A source is a plugin (the entry-point group ``caseboard.sources``, ``registry.py``). It is built from its
configuration (``config.SourceConfig``) and offers:

    kinds        the work-request kinds it serves by default (``metrics_query``, ``certificate_check``, ...)
    operations   its read-only operations, each with a pydantic model of its parameters
    run(query, deadline)  one query; returns an ``Answer``: the raw response bytes and what code read in them

A source never writes to ledger or store: ``record.py`` does that, the same way for every source, so what a
query recorded does not depend on the plugin's care. Read-only is the plugin's declaration (its operations)
held by tests against real servers (docs/sources.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from caseboard.domain.errors import CaseboardError

if TYPE_CHECKING:
    from caseboard.sources.config import SourceConfig


class Parameters(BaseModel):
    """The parameters of one operation: strict, no unknown names."""

    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True)
class Operation:
    """A read-only operation a source declares: its name, what it does, the model of its parameters."""

    name: str
    description: str
    parameters: type[Parameters]
    ranged: bool = True
    """Whether it covers a time range (``start``/``end``); a TLS chain is read as it is now."""


@dataclass(frozen=True)
class Query:
    """One query as the specialist asks it: the operation, its validated parameters, the time range it covers
    (None when the operation reads the present, a certificate chain), the targets asked for and the filters."""

    operation: str
    parameters: Parameters
    time_range: tuple[datetime, datetime] | None = None
    targets: tuple[str, ...] = ()
    filters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Finding:
    """A fact code read in a response: what it says, the instance it is about, its time in the data, and the
    exact lines (from 1) or bytes (from 0) of the raw response it rests on, both ends included."""

    statement: str
    instance: str
    event_time: datetime
    lines: tuple[int, int] | None = None
    bytes: tuple[int, int] | None = None


@dataclass
class Answer:
    """What one query returned: the raw bytes (as the source sent them, cut at the byte guardrail), the targets
    that answered, why it is incomplete (each reason a short token), and the findings."""

    raw: bytes
    media_type: str = "application/json"
    answered: tuple[str, ...] = ()
    incomplete: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    unread: bool = False
    """The response could not be read (cut by the byte guardrail): no finding, and no absence, is claimed."""
    targets: tuple[str, ...] | None = None
    """The targets asked for, when the source learns them while querying (the instances of a query's series);
    None keeps the query's own."""


class SourceFailed(CaseboardError):
    """A source could not answer: unreachable, refused, an error status, a deadline passed. The message is the
    source's own, with secrets removed (``record.redact``)."""

    def __init__(self, message: str, *, timeout: bool = False, raw: bytes = b"") -> None:
        super().__init__(message)
        self.timeout = timeout
        self.raw = raw


def cause(error: BaseException) -> str:
    """What went wrong, said by the errors themselves: a task group (anyio's, the MCP SDK's) wraps a refused
    connection or a server's error in an ``ExceptionGroup`` whose own message says only how many it holds."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(cause(inner) for inner in error.exceptions))
    return f"{type(error).__name__}: {error}"


class Deadline:
    """A point in monotonic time; ``left()`` is what remains (never below a small floor, so a call still fails
    by its own timeout rather than by a zero one)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.001, self.at - time.monotonic())

    def passed(self) -> bool:
        return time.monotonic() >= self.at


@runtime_checkable
class Source(Protocol):
    """A diagnostic source built from its configuration."""

    kinds: tuple[str, ...]
    operations: Mapping[str, Operation]
    default_operation: str

    def plain(self, text: str) -> dict[str, Any]:
        """A request's plain-text target as the JSON form it stands for (the default operation's parameters)."""
        ...

    def run(self, query: Query, deadline: Deadline) -> Answer:
        """Runs one declared operation; raises ``SourceFailed`` when the source could not answer."""
        ...

    def close(self) -> None: ...


def parameters_of(operation: Operation, values: Mapping[str, Any]) -> Parameters:
    return operation.parameters.model_validate(dict(values))


class NoOptions(Parameters):
    """A plugin without settings of its own."""


@dataclass(frozen=True)
class SourcePlugin:
    """What an entry point of ``caseboard.sources`` names: the plugin's name, the model of its ``options`` and
    ``build(name, config, options)``, which makes the source of one tenant."""

    name: str
    build: Callable[[str, SourceConfig, Any], Source]
    options: type[BaseModel] = NoOptions

    def options_of(self, config: SourceConfig) -> Any:
        return self.options.model_validate(config.options)
