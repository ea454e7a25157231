"""The console's list: ``GET /workspaces`` with 1,000 workspaces in the key's tenant, against PostgreSQL.

1,000 workspaces of the tenant ``bench`` (each opened and given one observation; one in ten escalated to
``human_review_required``) and 200 of another tenant are committed through the coordinator; then a server in
this process answers ``GET /workspaces`` over HTTP (keep-alive, a bearer key). ``console_list_1000_ms`` is the
p99 of the default page (the 50 newest) once the directory has folded the log; the goal is under 100 ms (ADR
0151). Context: ``console_list_first_ms``, the first listing of the process (it folds the whole notification
log once); ``console_list_filtered_ms``, the p99 of "needs a person" with a text search; and
``console_list_after_commit_ms``, the p99 of a listing made right after a commit to one of the workspaces (it
reads and folds that commit). The key is checked once (``key_cache_s``): what a key's check costs, every route
pays at most once a second per key, and it is not the list's. ``--quick`` uses 100 workspaces.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from benchmarks.context import BenchContext, p99_of
from caseboard.api import create_app
from caseboard.api.embedded import serve_in_thread
from caseboard.app import build_app
from caseboard.coordinator import parse_contribution
from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from caseboard.logs import configure_logging
from caseboard.settings import Settings

LIMITS = {
    "max_selected_items": 20,
    "max_investigation_cycles": 6,
    "max_open_questions": 10,
    "max_proposals": 10,
    "max_pending_work": 10,
}


def _body(workspace_id: str, principal: str, role: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"workspace_id": workspace_id, "author": {"principal": principal, "role": role}, "items": [item]}


def _open(tenant: str) -> dict[str, Any]:
    return {
        "type": "open",
        "goal": f"why {tenant}'s logins fail",
        "runtime_limits": LIMITS,
        "execution_mode": "read_only",
        "scope": {"tenant_id": tenant, "environment": "production", "service": f"{tenant}-api"},
    }


def _observation(obs_id: str) -> dict[str, Any]:
    return {
        "type": "observation",
        "id": obs_id,
        "statement": "authentication failures on payments-api-3",
        "source": {"system": "auth-logs", "instance": "payments-api-3"},
        "event_time": "2026-03-02T13:57:00Z",
        "event_time_quality": "verified",
        "evidence_ref": f"artifact://logs/{obs_id}",
    }


def populate(app: Any, workspaces: int, others: int) -> None:
    coordinator = app.coordinator()

    def submit(body: dict[str, Any], key: str) -> None:
        outcome = coordinator.submit(parse_contribution(body), key)
        assert outcome["ok"], outcome

    for n in range(workspaces + others):
        tenant = "bench" if n < workspaces else "other"
        workspace = f"ws-{n:05d}"
        key = f"{tenant}/{workspace}"
        submit(_body(workspace, "operator", "operator", _open(tenant)), key)
        submit(_body(workspace, "logs", "specialist", _observation(f"obs-{n}")), key)
        if n % 10 == 3:
            status = {"type": "status", "to": "human_review_required", "reason": "the plan needs a person"}
            submit(_body(workspace, "operator", "operator", status), key)


def timed(client: httpx.Client, params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    answer = client.get("/workspaces", params=params)
    elapsed = time.perf_counter() - started
    assert answer.status_code == 200, answer.text
    return elapsed * 1000, answer.json()


def run(ctx: BenchContext) -> dict[str, float]:
    configure_logging("warning", "json", cache=True)  # the section has a process of its own
    workspaces = 100 if ctx.quick else 1000
    requests = 50 if ctx.quick else 300
    with ctx.fresh_schema() as url:
        app = build_app(Settings(), database_url=url)
        keys = open_key_store(url)
        try:
            started = time.perf_counter()
            populate(app, workspaces, workspaces // 5)
            print(
                f"console: {workspaces} workspaces (and {workspaces // 5} of another tenant) in "
                f"{time.perf_counter() - started:.1f} s",
                flush=True,
            )
            token = keys.create("bench-operator", (Role.OPERATOR,), "bench").token
            api = create_app(app, keys, key_cache_s=600)  # the route, not the key store's once-a-second check
            with (
                serve_in_thread(api) as base_url,
                httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client,
            ):
                first_ms, page = timed(client, {})
                assert page["total"] == workspaces and len(page["workspaces"]) == 50
                plain = [timed(client, {})[0] for _ in range(requests)]
                filtered = []
                for _ in range(requests):
                    ms, page = timed(client, {"needs_person": "true", "q": "ws-00"})
                    filtered.append(ms)
                assert page["workspaces"] and all(r["needs_person"] for r in page["workspaces"])
                coordinator = app.coordinator()
                after_commit = []
                for n in range(min(requests, 100)):
                    workspace = f"ws-{n:05d}"
                    body = _body(workspace, "logs", "specialist", _observation(f"obs-more-{n}"))
                    assert coordinator.submit(parse_contribution(body), f"bench/{workspace}")["ok"]
                    after_commit.append(timed(client, {})[0])
        finally:
            keys.close()
            app.close()
    figures = {
        "console_list_1000_ms": p99_of(plain),
        "console_list_first_ms": first_ms,
        "console_list_filtered_ms": p99_of(filtered),
        "console_list_after_commit_ms": p99_of(after_commit),
    }
    print(
        f"console: GET /workspaces, {workspaces} workspaces in the tenant: p99 {figures['console_list_1000_ms']:.1f}"
        f" ms (goal < 100), first {first_ms:.0f} ms, filtered p99 {figures['console_list_filtered_ms']:.1f} ms,"
        f" after a commit p99 {figures['console_list_after_commit_ms']:.1f} ms",
        flush=True,
    )
    return figures
