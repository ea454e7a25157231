"""Serving an application on a free loopback port in a background thread (tests and benchmarks)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


@contextmanager
def serve_in_thread(api: Any, host: str = "127.0.0.1", startup_timeout_s: float = 20.0) -> Iterator[str]:
    """Run ``api`` under uvicorn until the block ends, shutdown events included; yields its base URL (the
    port is chosen by the OS)."""
    config = uvicorn.Config(api, host=host, port=0, log_level="warning", lifespan="on", ws="none", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="caseboard-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the HTTP server did not start within {startup_timeout_s} s")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=startup_timeout_s)
