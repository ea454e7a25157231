"""Selective routing of incident-042: who hears about which commit, and with which versions."""

from __future__ import annotations

from caseboard.coordinator import Coordinator
from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.route import coalesce, route
from caseboard.ledger import open_ledger
from caseboard.reducers import get_reducer
from tests.conftest import play, scenario_lines


def incident_042_routes() -> dict[int, list[Notification]]:
    ledger = open_ledger("memory://")
    play(Coordinator(ledger, trust_timestamps=True), scenario_lines())
    reducer = get_reducer()
    state = reducer.initial("incident-042")
    routes = {}
    for commit in ledger.read("incident-042"):
        state = reducer.evolve(state, commit)
        routes[commit.version] = route(commit, state)
    return routes


def selective(notifications: list[Notification]) -> list[tuple[str, str, str | None]]:
    return [(n.audience, n.kind, n.subject) for n in notifications if n.audience not in ("snapshot", "history")]


def test_every_commit_reaches_history_and_snapshot_subscribers_once() -> None:
    for version, notifications in incident_042_routes().items():
        kinds = [(n.audience, n.kind) for n in notifications]
        assert kinds.count(("history", "commit")) == 1, version
        assert kinds.count(("snapshot", "snapshot_changed")) == 1, version


def test_claims_renewals_and_results_without_evidence_wake_nobody() -> None:
    routes = incident_042_routes()
    for version in (2, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 17):
        assert selective(routes[version]) == [], version


def test_specialists_hear_about_requests_of_their_kind() -> None:
    routes = incident_042_routes()
    requested = [(n.request_kind, n.subject, n.queue) for n in routes[4] if n.kind == "work_requested"]
    assert requested == [
        ("log_query", "log-query-001", "caseboard.specialist.log_query"),
        ("change_calendar", "change-query-002", "caseboard.specialist.change_calendar"),
        ("metrics_query", "metrics-query-003", "caseboard.specialist.metrics_query"),
        ("deploy_history", "deploy-history-004", "caseboard.specialist.deploy_history"),
        ("dependency_health", "dependency-health-005", "caseboard.specialist.dependency_health"),
    ]


def test_the_verifier_hears_about_the_new_claim_with_its_evidence_revisions() -> None:
    [claim] = [n for n in incident_042_routes()[18] if n.kind == "claim_to_check"]
    assert claim.audience == "verifier"
    assert claim.subject == "hyp-certificate-initiated-failure"
    assert claim.evidence_revisions == {"obs-authentication-failures": 16, "obs-certificate-change": 17}


def test_the_planner_hears_about_challenging_evidence_and_the_stale_proposal() -> None:
    routes = incident_042_routes()
    assert selective(routes[19]) == [("planner", "evidence_changed", "hyp-certificate-initiated-failure")]
    [stale] = [n for n in routes[20] if n.audience == "planner"]
    assert stale.kind == "proposal_requires_revalidation"
    assert stale.based_on_version == 18
    assert stale.workspace_version == 20
    assert stale.evidence_revisions == {"hyp-certificate-initiated-failure": 19}


def test_a_cycle_gives_the_scheduled_planner_a_turn() -> None:
    assert selective(incident_042_routes()[3]) == [("planner", "turn", "planner-1")]


def test_notification_ids_are_stable_across_routings() -> None:
    first = [n.id for ns in incident_042_routes().values() for n in ns]
    second = [n.id for ns in incident_042_routes().values() for n in ns]
    assert first == second
    assert len(set(first)) == len(first)


def test_coalescing_keeps_only_the_latest_snapshot_notice_per_workspace() -> None:
    routes = incident_042_routes()
    batch = [n for version in (18, 19, 20) for n in routes[version]]
    kept = coalesce(batch)
    snapshots = [n.workspace_version for n in kept if n.kind == "snapshot_changed"]
    assert snapshots == [20]
    assert [n.workspace_version for n in kept if n.kind == "commit"] == [18, 19, 20]
    assert len(kept) == len(batch) - 2
