"""A planner is told, in the code's words, which kinds of check its tenant's sources can run."""

from __future__ import annotations

from pathlib import Path

from caseboard.agent.plugin import participant
from caseboard.app import build_app
from caseboard.dispatcher.notification import Notification
from caseboard.domain.items import Role
from caseboard.settings import Settings
from caseboard.sources.catalog import checks_by_tenant

SOURCES_TOML = """
[tenants.tenant-a.sources.prom]
type = "prometheus"
endpoint = "http://127.0.0.1:9"
[tenants.tenant-a.sources.certs]
type = "tls"
[tenants.tenant-b.sources.logs]
type = "logs"
kinds = ["log_query", "auth_log_query"]
"""


def test_each_tenant_s_checks_by_kind_with_their_sources_and_operations(tmp_path: Path) -> None:
    path = tmp_path / "sources.toml"
    path.write_text(SOURCES_TOML)
    assert checks_by_tenant(str(path)) == {
        "tenant-a": "certificate_check (certs: chain); metrics_query (prom: range_query, instant_query, series, "
        "alerts, rules)",
        "tenant-b": "auth_log_query (logs: lines, loki_range); log_query (logs: lines, loki_range)",
    }


def test_the_planner_s_task_names_the_checks_of_the_workspace_s_tenant_only(tmp_path: Path) -> None:
    path = tmp_path / "sources.toml"
    path.write_text(SOURCES_TOML)
    app = build_app(Settings(database_url=f"sqlite:///{tmp_path}/l.db", sources_path=str(path)))
    try:
        planner = participant(app, object(), Role.PLANNER, "planner-1")  # type: ignore[arg-type]
        verifier = participant(app, object(), Role.VERIFIER, "verifier-1")  # type: ignore[arg-type]
    finally:
        app.close()
    turn = Notification(id="n", kind="turn", audience="planner", workspace_id="w", workspace_version=3)

    def projection(tenant: str) -> dict[str, object]:
        return {"status": "investigating", "workspace_version": 3, "scope": {"tenant_id": tenant}}

    task = planner.task(turn, projection("tenant-a"))
    assert task is not None and "metrics_query (prom: range_query, instant_query" in task
    assert "certificate_check (certs: chain)" in task and "log_query" not in task
    other = planner.task(turn, projection("tenant-c"))
    assert other is not None and "diagnostic sources" not in other
    assert verifier.checks == {}
