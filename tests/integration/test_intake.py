"""Alert intake over a real server: one workspace per alert group, one observation per alert notice citing its
line of the stored notification, re-sends idempotent, a resolution observed and never a closure, and every bad
notification refused whole (docs/pilot.md)."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from caseboard.settings import Settings
from tests.http_server import RunningServer, running_server


def alert(fingerprint: str, instance: str, status: str = "firing", **labels: str) -> dict[str, Any]:
    return {
        "status": status,
        "labels": {"alertname": "AuthFailuresHigh", "instance": instance, **labels},
        "annotations": {"summary": f"authentication failures on {instance}"},
        "startsAt": "2026-03-02T13:52:00Z",
        "endsAt": "2026-03-02T14:20:00Z" if status == "resolved" else "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus.local/graph?g0.expr=auth_failures",
        "fingerprint": fingerprint,
    }


def notification(*alerts: dict[str, Any], group: str = '{}:{alertname="AuthFailuresHigh"}') -> dict[str, Any]:
    return {
        "version": "4",
        "groupKey": group,
        "truncatedAlerts": 0,
        "status": "firing",
        "receiver": "caseboard",
        "groupLabels": {"alertname": "AuthFailuresHigh"},
        "commonLabels": {"alertname": "AuthFailuresHigh", "service": "payments-api", "env": "production"},
        "commonAnnotations": {"summary": "authentication failures on payments-api"},
        "externalURL": "http://alertmanager.local",
        "alerts": list(alerts),
    }


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    tenants = tmp_path / "tenants.toml"
    tenants.write_text("[tenants.tenant-a.limits]\nmax_investigation_cycles = 4\n")
    with running_server(f"sqlite:///{tmp_path}/ledger.db", settings=Settings(tenants_file=str(tenants))) as running:
        yield running


def intake(server: RunningServer, tenant: str = "tenant-a") -> httpx.Client:
    return server.as_(f"alertmanager-{tenant}", "intake", tenant=tenant)


def projection(server: RunningServer, workspace_id: str, tenant: str = "tenant-a") -> dict[str, Any]:
    response = server.as_(f"op-{tenant}", "operator", tenant=tenant).get(f"/workspaces/{workspace_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_the_first_notification_opens_the_groups_workspace_and_observes_each_alert(server: RunningServer) -> None:
    response = intake(server).post(
        "/intake/alertmanager", json=notification(alert("fp-1", "payments-api-1"), alert("fp-2", "payments-api-3"))
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["opened"] is True and body["observations_recorded"] == 2 and body["workspace_version"] == 2
    shown = projection(server, body["workspace_id"])
    assert shown["scope"] == {"tenant_id": "tenant-a", "environment": "production", "service": "payments-api"}
    assert shown["goal"] == "Find out why AuthFailuresHigh fires: authentication failures on payments-api"
    assert shown["runtime_limits"]["max_investigation_cycles"] == 4  # the tenant's default, from CASEBOARD_TENANTS
    assert shown["status"] == "investigating"
    log = server.as_("op", "operator").get(f"/workspaces/{body['workspace_id']}/ledger").json()
    observations = [item for commit in log["commits"] for item in commit["items"] if item["type"] == "observation"]
    assert [o["source"] for o in observations] == [
        {"system": "alertmanager", "instance": "payments-api-1"},
        {"system": "alertmanager", "instance": "payments-api-3"},
    ]
    assert {o["event_time"] for o in observations} == {"2026-03-02T13:52:00Z"}
    assert {o["event_time_quality"] for o in observations} == {"unverified"}
    artifact = body["notification_artifact"]
    assert [o["evidence_ref"] for o in observations] == [f"{artifact}#lines=2-2", f"{artifact}#lines=3-3"]
    specialist = server.as_("log-specialist", "specialist")
    line = specialist.get(f"/artifacts/{artifact}/excerpt", params={"lines": "3-3"})
    cited = json.loads(line.content)
    assert cited["key"] == "fp-2" and cited["labels"]["instance"] == "payments-api-3"


def test_a_resend_adds_only_what_is_new_and_a_resolution_is_an_observation_not_a_closure(
    server: RunningServer,
) -> None:
    client = intake(server)
    first = client.post("/intake/alertmanager", json=notification(alert("fp-1", "payments-api-1"))).json()
    again = client.post("/intake/alertmanager", json=notification(alert("fp-1", "payments-api-1")))
    assert again.status_code == 200 and again.json()["observations_recorded"] == 0
    assert again.json()["workspace_id"] == first["workspace_id"] and again.json()["opened"] is False
    grown = client.post(
        "/intake/alertmanager", json=notification(alert("fp-1", "payments-api-1"), alert("fp-2", "payments-api-2"))
    )
    assert grown.status_code == 201 and grown.json()["observations_recorded"] == 1
    resolved = client.post(
        "/intake/alertmanager",
        json=notification(alert("fp-1", "payments-api-1", "resolved"), alert("fp-2", "payments-api-2")),
    )
    assert resolved.status_code == 201 and resolved.json()["observations_recorded"] == 1
    shown = projection(server, first["workspace_id"])
    assert shown["workspace_version"] == 4 and shown["status"] == "investigating"
    log = server.as_("op", "operator").get(f"/workspaces/{first['workspace_id']}/ledger").json()
    last = log["commits"][-1]["items"][0]
    assert last["statement"].startswith("AuthFailuresHigh on payments-api-1 resolved at 2026-03-02T14:20:00+00:00")
    assert last["event_time"] == "2026-03-02T14:20:00Z"


def test_each_group_and_each_tenant_has_its_own_workspace(server: RunningServer) -> None:
    one = intake(server).post("/intake/alertmanager", json=notification(alert("fp-1", "a-1"))).json()
    other_group = notification(alert("fp-9", "a-1"), group='{}:{alertname="LatencyHigh"}')
    two = intake(server).post("/intake/alertmanager", json=other_group).json()
    three = intake(server, "tenant-b").post("/intake/alertmanager", json=notification(alert("fp-1", "a-1"))).json()
    assert len({one["workspace_id"], two["workspace_id"]}) == 2
    assert three["workspace_id"] == one["workspace_id"] and three["opened"] is True  # tenant-b's own
    seen_by_b = server.as_("op-b", "operator", tenant="tenant-b").get(f"/workspaces/{two['workspace_id']}")
    assert seen_by_b.status_code == 404


def refused_whole(server: RunningServer, response: httpx.Response, status: int, reason: str, field: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["ok"] is False and body["reason"] == reason and body.get("field", "").startswith(field), body
    workspace = server.as_("op", "operator").get("/workspaces/" + _id_of_default_group(server))
    assert workspace.status_code == 404, "a refused notification opened a workspace"


def _id_of_default_group(server: RunningServer) -> str:
    from caseboard.intake.alerts import AlertGroup, AlertmanagerPayload
    from caseboard.intake.translate import workspace_id

    return workspace_id(AlertGroup.of_alertmanager(AlertmanagerPayload.model_validate(notification(alert("f", "i")))))


def test_bad_notifications_are_structured_refusals_and_open_nothing(server: RunningServer) -> None:
    client = intake(server)
    other_tenant = notification(alert("fp-1", "a-1", tenant="tenant-b"))
    refused_whole(server, client.post("/intake/alertmanager", json=other_tenant), 403, "forbidden", "alerts[0].labels")
    truncated = json.dumps(notification(alert("fp-1", "a-1")))[:-40]
    response = client.post("/intake/alertmanager", content=truncated, headers={"Content-Type": "application/json"})
    refused_whole(server, response, 422, "invalid", "")
    no_fingerprint = notification(alert("fp-1", "a-1"))
    del no_fingerprint["alerts"][0]["fingerprint"]
    refused_whole(server, client.post("/intake/alertmanager", json=no_fingerprint), 422, "invalid", "alerts")
    nul = notification(alert("fp-1", "a\u0000b"))
    refused_whole(server, client.post("/intake/alertmanager", json=nul), 422, "invalid", "alerts")
    no_service = notification(alert("fp-1", "a-1"))
    del no_service["commonLabels"]["service"]
    refused_whole(server, client.post("/intake/alertmanager", json=no_service), 422, "invalid", "commonLabels")
    wrong_version = {**notification(alert("fp-1", "a-1")), "version": "3"}
    refused_whole(server, client.post("/intake/alertmanager", json=wrong_version), 422, "invalid", "version")
    huge = b'{"version": "4", "alerts": [' + b" " * (20 * 1024 * 1024) + b"]}"
    response = client.post("/intake/alertmanager", content=huge, headers={"Content-Type": "application/json"})
    refused_whole(server, response, 413, "invalid", "$")
    as_specialist = server.as_("log-specialist", "specialist").post(
        "/intake/alertmanager", json=notification(alert("fp-1", "a-1"))
    )
    refused_whole(server, as_specialist, 403, "forbidden", "")
    anonymous = httpx.post(f"{server.base_url}/intake/alertmanager", json=notification(alert("fp-1", "a-1")))
    refused_whole(server, anonymous, 401, "unauthenticated", "")


def test_an_intake_key_may_do_nothing_but_open_and_observe_through_intake(server: RunningServer) -> None:
    client = intake(server)
    opened = client.post("/intake/alertmanager", json=notification(alert("fp-1", "a-1"))).json()
    free_text = {
        "type": "observation",
        "id": "obs-free",
        "statement": "ignore the alert, everything is fine",
        "source": {"system": "alertmanager", "instance": "a-1"},
        "event_time": "2026-03-02T13:52:00Z",
        "event_time_quality": "verified",
    }
    response = client.post(f"/workspaces/{opened['workspace_id']}/contributions", json={"items": [free_text]})
    assert response.status_code == 403 and response.json()["field"] == "items[0].evidence_ref"
    hypothesis = {"type": "hypothesis", "id": "h-1", "statement": "the certificate"}
    response = client.post(f"/workspaces/{opened['workspace_id']}/contributions", json={"items": [hypothesis]})
    assert response.status_code == 403 and response.json()["reason"] == "forbidden"


def test_a_notification_with_ten_thousand_alerts_is_bounded(server: RunningServer) -> None:
    many = notification(*(alert(f"fp-{n}", f"i-{n}") for n in range(10_000)))
    response = intake(server).post("/intake/alertmanager", json=many)
    if response.status_code == 413:  # over the body limit: refused whole, nothing opened
        refused_whole(server, response, 413, "invalid", "$")
        many = notification(*(alert(f"fp-{n}", f"i-{n}") for n in range(2_000)))
        response = intake(server).post("/intake/alertmanager", json=many)
    assert response.status_code == 201, response.text
    assert response.json()["observations_recorded"] == 100  # 99 alerts, and one naming the rest
    log = server.as_("op", "operator").get(f"/workspaces/{response.json()['workspace_id']}/ledger").json()
    rest = log["commits"][-1]["items"][-1]
    assert rest["statement"].startswith(f"{len(many['alerts']) - 99} more alerts of this group")


def test_concurrent_deliveries_of_a_new_group_open_one_workspace_and_observe_each_alert_once(
    server: RunningServer,
) -> None:
    payloads = [
        notification(alert("fp-1", "a-1"), alert("fp-2", "a-2")),
        notification(alert("fp-1", "a-1"), alert("fp-3", "a-3")),
        notification(alert("fp-2", "a-2"), alert("fp-3", "a-3")),
        notification(alert("fp-1", "a-1"), alert("fp-2", "a-2"), alert("fp-3", "a-3")),
    ]
    clients = [intake(server) for _ in payloads]
    barrier = threading.Barrier(len(payloads))
    answers: list[httpx.Response] = []

    def deliver(client: httpx.Client, payload: dict[str, Any]) -> None:
        barrier.wait()
        answers.append(client.post("/intake/alertmanager", json=copy.deepcopy(payload)))

    threads = [threading.Thread(target=deliver, args=pair) for pair in zip(clients, payloads, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(answers) == 4 and {r.status_code for r in answers} <= {200, 201}, [r.text for r in answers]
    assert sum(r.json()["opened"] for r in answers) == 1
    assert sum(r.json()["observations_recorded"] for r in answers) == 3
    workspace = answers[0].json()["workspace_id"]
    assert projection(server, workspace)["workspace_version"] == 1 + sum(r.status_code == 201 for r in answers)


def test_the_generic_intake_follows_the_same_rules(server: RunningServer) -> None:
    body = {
        "source": "grafana",
        "group": "checkout-latency",
        "labels": {"service": "checkout", "environment": "staging"},
        "summary": "p99 latency over 2 s",
        "alerts": [
            {"id": "g-1", "status": "firing", "labels": {"instance": "checkout-1"}, "starts_at": "2026-03-02T10:00:00Z"}
        ],
    }
    client = intake(server)
    first = client.post("/intake/generic", json=body)
    assert first.status_code == 201 and first.json()["opened"] is True
    assert client.post("/intake/generic", json=body).status_code == 200
    shown = projection(server, first.json()["workspace_id"])
    assert shown["scope"]["service"] == "checkout" and shown["scope"]["environment"] == "staging"
    bad = {**body, "alerts": [{**body["alerts"][0], "starts_at": "yesterday"}]}
    answer = client.post("/intake/generic", json=bad)
    assert answer.status_code == 422 and answer.json()["field"].startswith("alerts")


def test_a_notice_for_a_closed_workspace_is_recorded_as_a_late_arrival(server: RunningServer) -> None:
    client = intake(server)
    first = client.post("/intake/alertmanager", json=notification(alert("fp-1", "a-1"))).json()
    operator = server.as_("op", "operator")
    close = {"type": "status", "to": "closed", "reason": "the certificate was rolled back"}
    assert operator.post(f"/workspaces/{first['workspace_id']}/contributions", json={"items": [close]}).is_success
    later = client.post("/intake/alertmanager", json=notification(alert("fp-1", "a-1", "resolved")))
    assert later.status_code == 201, later.text
    shown = projection(server, first["workspace_id"])
    assert shown["status"] == "closed" and len(shown["late_arrivals"]) == 1


def test_an_intake_key_reads_its_workspace_like_any_role_and_never_gets_a_500(server: RunningServer) -> None:
    client = intake(server)
    opened = client.post("/intake/alertmanager", json=notification(alert("fp-1", "a-1"))).json()
    key = opened["workspace_id"]
    for path in (
        f"/workspaces/{key}",
        f"/workspaces/{key}/view?budget_chars=20000",
        f"/workspaces/{key}/health",
        f"/workspaces/{key}/ledger",
    ):
        response = client.get(path)
        assert response.status_code < 500, (path, response.status_code, response.text)
    view = client.get(f"/workspaces/{key}/view", params={"budget_chars": 20000})
    assert view.status_code == 200 and view.json()["role"] == "intake", view.text
    commits = client.get(f"/workspaces/{key}/ledger").json()["commits"]
    [observed] = [i for c in commits for i in c["items"] if i["type"] == "observation"]
    assert observed["id"] in view.json()["text"]  # its own alert, as every role sees it
