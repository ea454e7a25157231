"""One error tree for every method of the Python client (docs/agents.md): a server that does not answer is
``LedgerUnavailable`` for reads, the event stream and submissions alike; an answer that is not caseboard's is
too; and a ``VersionConflict`` carries ``since`` as the page promises."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from caseboard.client import Caseboard, error_of
from caseboard.domain.errors import LedgerUnavailable, VersionConflict

CALLS: dict[str, Callable[[Caseboard], Any]] = {
    "whoami": lambda c: c.whoami(),
    "read": lambda c: c.read("incident-042"),
    "view": lambda c: c.view("incident-042"),
    "ledger": lambda c: c.ledger("incident-042"),
    "timeline": lambda c: c.timeline("incident-042"),
    "events": lambda c: list(c.events("incident-042", timeout_s=1)),
    "open": lambda c: c.open("ws-1", scope={}, goal="g", runtime_limits={}),
    "submit": lambda c: c.submit("incident-042", [{"type": "question", "id": "q-1", "text": "?"}]),
}


def dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed on leaving: nothing listens there


@pytest.mark.parametrize("method", sorted(CALLS))
def test_every_method_against_a_dead_server_raises_ledger_unavailable(method: str) -> None:
    board = Caseboard(f"http://127.0.0.1:{dead_port()}", "cbk_x", retry_for_s=0.2)
    with board, pytest.raises(LedgerUnavailable, match=r"no answer|event stream"):
        CALLS[method](board)


@pytest.mark.parametrize("method", sorted(CALLS))
def test_an_answer_that_is_not_caseboards_is_ledger_unavailable(method: str) -> None:
    proxy = httpx.MockTransport(lambda request: httpx.Response(502, text="<html>Bad Gateway</html>"))
    board = Caseboard("http://caseboard.invalid", "cbk_x", retry_for_s=0.2, transport=proxy)
    with board, pytest.raises(LedgerUnavailable, match="502 without a JSON body"):
        CALLS[method](board)


def test_a_version_conflict_carries_what_changed_since_as_since() -> None:
    since = [{"version": 5, "author": "planner-1", "items": ["hypothesis hyp-1"]}]
    body = {"ok": False, "reason": "version_conflict", "message": "behind", "current_version": 5, "since": since}
    conflict = error_of(body, expected=4)
    assert isinstance(conflict, VersionConflict)
    assert (conflict.expected, conflict.current, conflict.since) == (4, 5, since)
    assert VersionConflict(1, 2, since).since == since
