"""A server process leaves what its startup built out of the garbage collector's reach before it serves
(``caseboard.heap.settle_startup``): a full collection of a server holding hundreds of event streams
otherwise scanned every module, route and cached state, and paused its event loop for 110-370 ms
(``sse_1000_subscribers_p99_ms`` in docs/benchmarks.md)."""

from __future__ import annotations

import gc
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from caseboard.api.factory import from_environment
from caseboard.cli.main import main


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # this test process goes on collecting what it allocated


def test_caseboard_serve_freezes_its_startup_before_it_serves(
    unfrozen: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frozen_when_serving: list[int] = []

    def run(self: uvicorn.Server, sockets: Any = None) -> None:
        frozen_when_serving.append(gc.get_freeze_count())

    monkeypatch.setattr(uvicorn.Server, "run", run)
    url = f"sqlite:///{tmp_path}/ledger.db"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["--database-url", url, "serve", "--port", str(port)]) == 0
    assert frozen_when_serving and frozen_when_serving[0] > 10_000


def test_each_worker_of_caseboard_serve_freezes_its_startup(
    unfrozen: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CASEBOARD_DATABASE_URL", f"sqlite:///{tmp_path}/ledger.db")
    api = from_environment()
    try:
        assert gc.get_freeze_count() > 10_000
    finally:
        api.state.services.app.close()
        api.state.services.keys.close()
