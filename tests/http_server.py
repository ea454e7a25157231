"""A real caseboard HTTP server for tests: uvicorn in a thread on a free loopback port, with helpers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from caseboard.api import create_app
from caseboard.api.embedded import serve_in_thread
from caseboard.api.fast_path import CaseboardAPI
from caseboard.app import App, build_app
from caseboard.domain.items import Role
from caseboard.keys import KeyStore, open_key_store
from caseboard.settings import Settings

LIMITS = {
    "max_selected_items": 20,
    "max_investigation_cycles": 6,
    "max_open_questions": 10,
    "max_proposals": 10,
    "max_pending_work": 10,
}


@dataclass
class RunningServer:
    base_url: str
    app: App
    keys: KeyStore
    api: CaseboardAPI
    clients: list[httpx.Client] = field(default_factory=list)

    def token(self, principal: str, *roles: str, tenant: str = "tenant-a") -> str:
        return self.keys.create(principal, tuple(Role(r) for r in roles), tenant).token

    def client(self, token: str, role: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"}
        if role is not None:
            headers["X-Caseboard-Role"] = role
        client = httpx.Client(base_url=self.base_url, headers=headers, timeout=30)
        self.clients.append(client)
        return client

    def as_(self, principal: str, *roles: str, tenant: str = "tenant-a") -> httpx.Client:
        return self.client(self.token(principal, *roles, tenant=tenant))


def open_body(workspace_id: str, tenant: str = "tenant-a", **extra: Any) -> dict[str, Any]:
    return {
        "workspace_id": workspace_id,
        "scope": {"tenant_id": tenant, "environment": "production", "service": "payments-api"},
        "goal": "Find the failure mechanism",
        "runtime_limits": LIMITS,
        **extra,
    }


def observation(obs_id: str, statement: str = "auth failures on payments-api-3") -> dict[str, Any]:
    return {
        "type": "observation",
        "id": obs_id,
        "statement": statement,
        "source": {"system": "auth-logs", "instance": "payments-api-3"},
        "event_time": "2026-03-02T13:57:00Z",
        "event_time_quality": "verified",
        "evidence_ref": f"artifact://logs/{obs_id}",
    }


@contextmanager
def running_server(
    database_url: str, *, trust_timestamps: bool = False, key_cache_s: float = 1.0, settings: Settings | None = None
) -> Iterator[RunningServer]:
    app = build_app(settings or Settings(), database_url=database_url)
    keys = open_key_store(database_url)
    api = create_app(app, keys, trust_timestamps=trust_timestamps, poll_interval_s=0.05, key_cache_s=key_cache_s)
    try:
        with serve_in_thread(api) as base_url:
            running = RunningServer(base_url, app, keys, api)
            try:
                yield running
            finally:
                for client in running.clients:
                    client.close()
    finally:
        keys.close()
        app.close()
