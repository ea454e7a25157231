"""The application as each uvicorn worker process builds it: from the environment's settings.

``caseboard serve --workers N`` hands uvicorn the import string of ``from_environment`` (a factory, called
in each worker after it starts), so every worker opens its own ledger pool and key store; the database
arbitrates between them as it does between any writers (DESIGN.md §5).
"""

from __future__ import annotations

from fastapi import FastAPI

from caseboard.api.server import create_app
from caseboard.app import build_app
from caseboard.heap import settle_startup
from caseboard.keys import open_key_store
from caseboard.logs import configure_logging
from caseboard.settings import Settings

TRUST_TIMESTAMPS = "CASEBOARD_TRUST_TIMESTAMPS"
"""How ``caseboard serve --workers N`` hands ``--trust-timestamps`` to its workers (``Settings.trust_timestamps``)."""


def from_environment() -> FastAPI:
    settings = Settings.from_env()
    configure_logging(settings.log_level, settings.log_format, cache=True)  # a server worker process
    app = build_app(settings)
    keys = open_key_store(settings.database_url, pool_size=settings.pool_size)
    api = create_app(app, keys, trust_timestamps=settings.trust_timestamps, close_on_shutdown=True)
    settle_startup()
    return api
