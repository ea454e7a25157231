"""Issue 34, item 10: ``/metrics`` sums every tenant's workspaces, so only the deployment's monitoring reads it
(ADR 0141): with ``CASEBOARD_METRICS_TOKEN`` set, a client carrying it as a bearer token; without, a client on
the loopback interface. Anyone else is refused in the contract's shape."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx

from caseboard.api import create_app
from caseboard.app import build_app
from caseboard.keys import open_key_store
from caseboard.settings import Settings


def scrape(url: str, settings: Settings, client: str, headers: dict[str, str] | None = None) -> httpx.Response:
    app = build_app(settings, database_url=url)
    keys = open_key_store(url)
    api = create_app(app, keys)

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=api, client=(client, 40123))
        async with httpx.AsyncClient(transport=transport, base_url="http://caseboard") as http:
            return await http.get("/metrics", headers=headers or {})

    try:
        return anyio.run(get)
    finally:
        keys.close()
        app.close()


def test_without_a_token_only_loopback_clients_read_the_metrics(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    for loopback in ("127.0.0.1", "::1", "127.0.0.9"):
        answer = scrape(url, Settings(), loopback)
        assert answer.status_code == 200 and "caseboard_" in answer.text, loopback
    for remote in ("203.0.113.7", "10.0.0.5", "2001:db8::1"):
        answer = scrape(url, Settings(), remote)
        assert answer.status_code == 403, (remote, answer.text)
        assert answer.json()["reason"] == "forbidden" and "CASEBOARD_METRICS_TOKEN" in answer.json()["message"]
        assert "caseboard_" not in answer.text


def test_with_a_token_only_its_bearer_reads_the_metrics_from_anywhere(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    settings = Settings(metrics_token="scrape-secret-1")
    assert Settings.from_env({"CASEBOARD_METRICS_TOKEN": "scrape-secret-1"}).metrics_token == "scrape-secret-1"
    for client, headers in (
        ("203.0.113.7", None),
        ("127.0.0.1", None),  # a token set is required of loopback clients too (a proxy on the host)
        ("203.0.113.7", {"Authorization": "Bearer scrape-secret-2"}),
        ("203.0.113.7", {"Authorization": "Basic scrape-secret-1"}),
    ):
        answer = scrape(url, settings, client, headers)
        assert answer.status_code == 401 and answer.json()["reason"] == "unauthenticated", (client, headers)
    answer = scrape(url, settings, "203.0.113.7", {"Authorization": "Bearer scrape-secret-1"})
    assert answer.status_code == 200 and "caseboard_" in answer.text
