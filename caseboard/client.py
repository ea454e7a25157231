"""``caseboard.client``: the HTTP API from Python, for people who write their own participants.

    with Caseboard("http://127.0.0.1:8000", token) as board:
        state = board.read("incident-042")
        board.submit("incident-042", [observation], expected_version=state["workspace_version"])

Refusals are raised as the project's errors, with their data (``caseboard/domain/errors.py``):

    CaseboardError
    ├── Refusal               reason, message, field, details (current_version, since, ...)
    │   └── VersionConflict   current, since: what changed after the version you expected
    ├── UnknownWorkspace      no such workspace for this key's tenant (another tenant's answers the same)
    ├── LedgerUnavailable     the server answered 503, or never answered within the retry window
    └── Unauthenticated       no key, an unknown or a revoked one (this module's)

``submit`` never loses or duplicates work: it always sends an idempotency key (one is made up when none is
given), and when the answer does not arrive (the connection broke, the server died, the read timed out) it
sends the same submission again with the same key until ``retry_for_s`` has passed. If the first attempt had
landed, the retry answers its original outcome (``idempotent_replay``) and appends nothing.
``submit_with_resync`` is how a participant should write: read, decide (``build(state)``), submit with
``expected_version``; on ``version_conflict`` read again and decide again, a bounded number of times.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx

from caseboard.domain.errors import (
    CaseboardError,
    LedgerUnavailable,
    Reason,
    Refusal,
    UnknownWorkspace,
    VersionConflict,
)

Json = dict[str, Any]
Build = Callable[[Json], list[Json]]
ROLE_HEADER = "X-Caseboard-Role"


class Unauthenticated(CaseboardError):
    """The server does not know the key (missing, unknown or revoked)."""


@dataclass(frozen=True)
class Whoami:
    key_id: str
    principal: str
    role: str
    roles: tuple[str, ...]
    tenant_id: str


@dataclass(frozen=True)
class Event:
    """One server-sent event: ``commit`` (``id`` is the workspace version) or the final ``end``."""

    event: str
    id: str | None
    data: Json


def error_of(body: Json, *, expected: int | None = None, workspace_id: str = "") -> CaseboardError:
    """The project's error for a refusal body."""
    reason = str(body.get("reason", ""))
    message = str(body.get("message", reason))
    details = {k: v for k, v in body.items() if k not in ("ok", "reason", "message", "field")}
    if reason == Reason.VERSION_CONFLICT:
        current = int(details.get("current_version", 0))
        return VersionConflict(expected if expected is not None else current, current, list(details.get("since", [])))
    if reason == Reason.UNKNOWN_WORKSPACE:
        return UnknownWorkspace(workspace_id)
    if reason == "unauthenticated":
        return Unauthenticated(message)
    if reason == "unavailable":
        return LedgerUnavailable(message)
    try:
        token = Reason(reason)
    except ValueError:
        token = Reason.INVALID
    return Refusal(token, message, field=body.get("field"), **details)


class Caseboard:
    """A client of one caseboard server, acting as one API key (and role, when the key holds several)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        role: str | None = None,
        timeout_s: float = 30.0,
        retry_for_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        if role is not None:
            headers[ROLE_HEADER] = role
        self.retry_for_s = retry_for_s
        self.http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout_s, transport=transport)

    def __enter__(self) -> Caseboard:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    # reading

    def whoami(self) -> Whoami:
        body = self._get("/whoami")
        return Whoami(body["key_id"], body["principal"], body["role"], tuple(body["roles"]), body["tenant_id"])

    def read(self, workspace_id: str, *, version: int | None = None, reducer: str | None = None) -> Json:
        """The projection, at the head or at ``version``."""
        return self._get(f"/workspaces/{workspace_id}", version=version, reducer=reducer)

    def view(
        self,
        workspace_id: str,
        *,
        budget_chars: int = 8000,
        role: str | None = None,
        version: int | None = None,
        as_of: str | None = None,
    ) -> Json:
        """The bounded model-facing view: entries are quoted data from other participants."""
        params = {"budget_chars": budget_chars, "role": role, "version": version, "as_of": as_of}
        return self._get(f"/workspaces/{workspace_id}/view", **params)

    def ledger(self, workspace_id: str, *, after: int = 0, limit: int = 200) -> Json:
        return self._get(f"/workspaces/{workspace_id}/ledger", after=after, limit=limit)

    def timeline(self, workspace_id: str, *, version: int | None = None) -> Json:
        return self._get(f"/workspaces/{workspace_id}/timeline", version=version)

    def events(self, workspace_id: str, *, after: int = 0, timeout_s: float = 300) -> Iterator[Event]:
        """The workspace's commits as they land (server-sent events), until the server ends the stream with
        an ``end`` event (yielded last: its ``next_after`` is where to resume)."""
        params = {"after": after, "timeout_s": timeout_s}
        timeout = httpx.Timeout(self.http.timeout.connect, read=timeout_s + 30)
        try:
            yield from self._events(workspace_id, params, timeout)
        except httpx.TransportError as error:
            raise LedgerUnavailable(f"the event stream of {workspace_id} failed: {error}") from error

    def _events(self, workspace_id: str, params: Json, timeout: httpx.Timeout) -> Iterator[Event]:
        with self.http.stream("GET", f"/workspaces/{workspace_id}/events", params=params, timeout=timeout) as answer:
            if answer.status_code >= 400:
                answer.read()
                _outcome(answer, None, workspace_id)
            kind, ident, data = "message", None, list[str]()
            for line in answer.iter_lines():
                if line == "":
                    if data:
                        yield Event(kind, ident, json.loads("\n".join(data)))
                        if kind == "end":
                            return
                    kind, ident, data = "message", None, list[str]()
                elif line.startswith(":"):
                    continue
                else:
                    name, _, value = line.partition(":")
                    value = value.removeprefix(" ")
                    if name == "event":
                        kind = value
                    elif name == "id":
                        ident = value
                    elif name == "data":
                        data.append(value)

    # writing

    def open(
        self,
        workspace_id: str,
        *,
        scope: Json,
        goal: str,
        runtime_limits: Json,
        idempotency_key: str | None = None,
    ) -> Json:
        """Open a workspace (an operator's key; ``scope.tenant_id`` must be the key's tenant)."""
        body = {
            "workspace_id": workspace_id,
            "scope": scope,
            "goal": goal,
            "runtime_limits": runtime_limits,
            "idempotency_key": idempotency_key or _new_key(),
        }
        return self._post("/workspaces", body, expected=None)

    def submit(
        self,
        workspace_id: str,
        items: list[Json],
        *,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
        at: str | None = None,
    ) -> Json:
        """Submit one contribution; the accepted outcome, or the refusal raised. Retried with the same
        idempotency key while no answer arrives (module docstring)."""
        body: Json = {"items": items, "idempotency_key": idempotency_key or _new_key()}
        if expected_version is not None:
            body["expected_version"] = expected_version
        if at is not None:
            body["at"] = at
        return self._post(f"/workspaces/{workspace_id}/contributions", body, expected=expected_version)

    def submit_with_resync(self, workspace_id: str, build: Build, *, attempts: int = 5) -> Json:
        """Read the projection, ``build(state)`` the items, submit them expecting that version; on
        ``version_conflict`` read again and build again, at most ``attempts`` times (then the last conflict
        is raised)."""
        conflict: VersionConflict | None = None
        for _ in range(attempts):
            state = self.read(workspace_id)
            try:
                return self.submit(workspace_id, build(state), expected_version=state["workspace_version"])
            except VersionConflict as error:
                conflict = error
        assert conflict is not None
        raise conflict

    # transport

    def _get(self, path: str, **params: Any) -> Json:
        """GET, sent again while no answer arrives, as ``_post`` (a read changes nothing)."""
        query = {k: v for k, v in params.items() if v is not None}
        return self._answer(lambda: self.http.get(path, params=query), path, expected=None)

    def _post(self, path: str, body: Json, *, expected: int | None) -> Json:
        """POST until an answer arrives (the same body, so the same idempotency key), for ``retry_for_s``."""
        return self._answer(lambda: self.http.post(path, json=body), path, expected, body.get("workspace_id", ""))

    def _answer(
        self, send: Callable[[], httpx.Response], path: str, expected: int | None, workspace_id: str = ""
    ) -> Json:
        """``send`` until an answer arrives, for ``retry_for_s``; every method's failures are the project's
        errors: a refusal as ``error_of`` makes it, no answer (or one that is not caseboard's) as
        ``LedgerUnavailable``."""
        deadline = time.monotonic() + self.retry_for_s
        pause = 0.05
        while True:
            try:
                answer = send()
            except httpx.TransportError as error:
                if time.monotonic() + pause > deadline:
                    raise LedgerUnavailable(f"no answer from the server for {self.retry_for_s:g} s: {error}") from error
                time.sleep(pause)  # a back-off between attempts, not a wait for work
                pause = min(pause * 2, 1.0)
                continue
            if answer.status_code == 503 and time.monotonic() + pause <= deadline:
                time.sleep(pause)
                pause = min(pause * 2, 1.0)
                continue
            return _outcome(answer, expected, _workspace_of(path) or workspace_id)


def _outcome(answer: httpx.Response, expected: int | None, workspace_id: str) -> Json:
    try:
        outcome: Json = answer.json()
    except ValueError:
        raise LedgerUnavailable(f"the server answered {answer.status_code} without a JSON body") from None
    if answer.status_code >= 400:
        raise error_of(outcome, expected=expected, workspace_id=workspace_id)
    return outcome


def _workspace_of(path: str) -> str:
    parts = path.split("/")
    return parts[2] if len(parts) > 2 and parts[1] == "workspaces" else ""


def _new_key() -> str:
    return f"client/{uuid.uuid4()}"
