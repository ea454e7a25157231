"""``caseboard.client`` against a real server: refusals as the project's errors, resync on a conflict, and a
submission whose answer is lost retried with its idempotency key without committing twice."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caseboard.client import Caseboard, Unauthenticated
from caseboard.domain.errors import Reason, Refusal, UnknownWorkspace, VersionConflict
from tests.http_server import LIMITS, RunningServer, observation, running_server

SCOPE = {"tenant_id": "tenant-a", "environment": "production", "service": "payments-api"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    with running_server(f"sqlite:///{tmp_path}/client.db") as running:
        yield running


def board(server: RunningServer, principal: str, *roles: str, base: str | None = None, **kw: Any) -> Caseboard:
    return Caseboard(base or server.base_url, server.token(principal, *roles), **kw)


def test_the_client_opens_submits_reads_and_raises_refusals_as_the_projects_errors(server: RunningServer) -> None:
    with board(server, "op", "operator") as op, board(server, "spec", "specialist") as spec:
        assert op.open("ws-1", scope=SCOPE, goal="find it", runtime_limits=LIMITS)["workspace_version"] == 1
        me = spec.whoami()
        assert (me.principal, me.role, me.tenant_id) == ("spec", "specialist", "tenant-a")
        accepted = spec.submit("ws-1", [observation("obs-1")], expected_version=1)
        assert (accepted["workspace_version"], accepted["author"]["principal"]) == (2, "spec")
        assert spec.read("ws-1")["workspace_version"] == 2
        assert spec.read("ws-1", version=1)["workspace_version"] == 1
        assert [e["id"] for e in spec.timeline("ws-1")["entries"]] == ["obs-1"]
        assert spec.ledger("ws-1", after=1)["commits"][0]["workspace_version"] == 2
        assert spec.view("ws-1", budget_chars=2000)["built_from_version"] == 2
        events = list(spec.events("ws-1", timeout_s=0.5))
        assert [e.id for e in events if e.event == "commit"] == ["1", "2"] and events[-1].event == "end"
        with pytest.raises(VersionConflict) as conflict:
            spec.submit("ws-1", [observation("obs-2")], expected_version=1)
        assert (conflict.value.current, conflict.value.expected) == (2, 1)
        assert [s["workspace_version"] for s in conflict.value.details["since"]] == [2]
        with pytest.raises(Refusal) as duplicate:
            spec.submit("ws-1", [observation("obs-1")])
        assert duplicate.value.reason is Reason.DUPLICATE_ID
        with pytest.raises(Refusal) as forbidden:
            spec.submit("ws-1", [{"type": "hypothesis", "id": "h", "statement": "s"}])
        assert forbidden.value.reason is Reason.FORBIDDEN
        with pytest.raises(UnknownWorkspace) as missing:
            spec.read("ws-nope")
        assert missing.value.workspace_id == "ws-nope"
    with Caseboard(server.base_url, "cbk_000000000000_nope") as stranger, pytest.raises(Unauthenticated):
        stranger.whoami()


def test_submit_with_resync_rebuilds_on_a_conflict_until_it_lands(server: RunningServer) -> None:
    with board(server, "op", "operator") as op, board(server, "spec", "specialist") as spec:
        op.open("ws-1", scope=SCOPE, goal="find it", runtime_limits=LIMITS)
        seen: list[int] = []

        def build(state: dict[str, Any]) -> list[dict[str, Any]]:
            seen.append(state["workspace_version"])
            if len(seen) == 1:  # someone else commits between this read and the submission
                spec.submit("ws-1", [observation("obs-other")])
            return [observation(f"obs-after-{state['workspace_version']}")]

        outcome = spec.submit_with_resync("ws-1", build)
        assert seen == [1, 2] and outcome["workspace_version"] == 3
        assert outcome["items"][0]["id"] == "obs-after-2"

        def always_behind(state: dict[str, Any]) -> list[dict[str, Any]]:
            spec.submit("ws-1", [observation(f"obs-race-{state['workspace_version']}")])
            return [observation(f"obs-never-{state['workspace_version']}")]

        with pytest.raises(VersionConflict):
            spec.submit_with_resync("ws-1", always_behind, attempts=2)


class CuttingProxy:
    """A loopback proxy that forwards each HTTP request to the server and, for the first ``cuts`` requests
    to a path containing ``cut_path``, closes the client's connection after the server answered, before
    the answer is passed on: the commit landed, the answer never arrived."""

    def __init__(self, upstream: str, cut_path: str, cuts: int = 1) -> None:
        host, port = upstream.removeprefix("http://").split(":")
        self.upstream = (host, int(port))
        self.cut_path = cut_path.encode()
        self.cuts = cuts
        self.forwarded = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        with client, socket.create_connection(self.upstream) as server:
            while True:
                request = _message(client)
                if request is None:
                    return
                server.sendall(request)
                answer = _message(server)
                if answer is None:
                    return
                self.forwarded += 1
                if self.cut_path in request.split(b"\r\n", 1)[0] and self.cuts > 0:
                    self.cuts -= 1
                    return  # the connection closes with the answer unsent
                client.sendall(answer)

    def close(self) -> None:
        self.listener.close()


def _message(sock: socket.socket) -> bytes | None:
    """One HTTP/1.1 message with a Content-Length body (all that the client and server send here)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        body += chunk
    return head + b"\r\n\r\n" + body


def test_a_submission_whose_answer_was_cut_is_retried_with_its_key_and_commits_once(server: RunningServer) -> None:
    proxy = CuttingProxy(server.base_url, "/contributions", cuts=1)
    try:
        with board(server, "op", "operator") as op:
            op.open("ws-1", scope=SCOPE, goal="find it", runtime_limits=LIMITS)
        with board(server, "spec", "specialist", base=proxy.url, retry_for_s=10) as spec:
            outcome = spec.submit("ws-1", [observation("obs-1")])
        assert outcome["workspace_version"] == 2 and outcome.get("idempotent_replay") is True
        assert proxy.cuts == 0 and proxy.forwarded >= 2
        with board(server, "reader", "reporter") as reader:
            ledger = reader.ledger("ws-1")
        assert [c["workspace_version"] for c in ledger["commits"]] == [1, 2]
    finally:
        proxy.close()
