"""Observations that cite an artifact's excerpt: checked at commit in the workspace's tenant, hash recorded."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caseboard.app import App, build_app
from caseboard.coordinator import parse_contribution
from caseboard.settings import Settings
from tests.unit.board import obs, open_item

LOG = b"".join(b"14:%02d auth_failure instance=payments-api-%d\n" % (m, m % 3) for m in range(20))


@pytest.fixture(params=["files", "postgres"])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[App]:
    url = f"sqlite:///{tmp_path}/ledger.db" if request.param == "files" else request.getfixturevalue("postgres_url")
    built = build_app(Settings(database_url=url), database_url=url)
    yield built
    built.close()


def submit(app: App, role: str, items: list[dict[str, Any]], workspace: str = "ws-1") -> dict[str, Any]:
    body = {"workspace_id": workspace, "author": {"principal": f"{role}-1", "role": role}, "items": items}
    return app.coordinator().submit(parse_contribution(json.dumps(body)))


def artifact(app: App, tenant: str = "tenant-a") -> str:
    return app.artifacts.put(tenant, [LOG], stored_by="log-specialist", media_type="text/plain").meta.artifact_id


def test_a_cited_excerpt_is_checked_and_its_sha256_recorded_in_the_decision(app: App) -> None:
    assert submit(app, "operator", [open_item()])["ok"]
    aid = artifact(app)
    outcome = submit(app, "specialist", [obs("obs-1", evidence_ref={"artifact": aid, "lines": [3, 4]})])
    assert outcome["ok"], outcome
    excerpt = b"".join(LOG.splitlines(keepends=True)[2:4])
    commit = app.ledger.read("ws-1", after=1)[0]
    assert commit.items[0].evidence_ref == f"{aid}#lines=3-4"  # type: ignore[union-attr]
    assert commit.decisions[0]["excerpt"] == {
        "artifact": aid,
        "lines": [3, 4],
        "sha256": hashlib.sha256(excerpt).hexdigest(),
        "length": len(excerpt),
    }
    by_bytes = submit(app, "specialist", [obs("obs-2", evidence_ref=f"{aid}#bytes=0-9")])
    assert by_bytes["ok"], by_bytes


def test_todays_free_evidence_strings_are_recorded_as_before_with_no_excerpt(app: App) -> None:
    submit(app, "operator", [open_item()])
    assert submit(app, "specialist", [obs("obs-1", evidence_ref="artifact://logs/payments-api/auth")])["ok"]
    assert "excerpt" not in app.ledger.read("ws-1", after=1)[0].decisions[0]


def test_a_range_outside_the_artifact_is_refused_as_invalid_naming_the_field(app: App) -> None:
    submit(app, "operator", [open_item()])
    aid = artifact(app)
    outcome = submit(app, "specialist", [obs("obs-1", evidence_ref={"artifact": aid, "lines": [19, 21]})])
    assert (outcome["ok"], outcome["reason"], outcome["field"]) == (False, "invalid", "items[0].evidence_ref")
    assert "20 lines" in outcome["message"]
    assert app.ledger.head("ws-1") == 1


def test_an_unknown_artifact_and_another_tenants_artifact_are_both_unknown_references(app: App) -> None:
    submit(app, "operator", [open_item()])
    foreign = artifact(app, tenant="tenant-b")
    for aid in (foreign, "sha256:" + "1" * 64):
        outcome = submit(app, "specialist", [obs("obs-1", evidence_ref={"artifact": aid, "bytes": [0, 3]})])
        assert (outcome["reason"], outcome["field"]) == ("unknown_reference", "items[0].evidence_ref"), outcome
    assert app.ledger.head("ws-1") == 1


@pytest.mark.parametrize("unit", ["lines", "bytes"])
def test_a_range_of_any_size_is_resolved_in_the_tenant_and_refused_past_the_end(app: App, unit: str) -> None:
    """Issue 34, item 3: sixteen digits (10**15) made the citation a free string, unchecked: accepted without an
    excerpt hash for a missing artifact, another tenant's, and one whose end it passes."""
    submit(app, "operator", [open_item()])
    ours, missing = artifact(app), "sha256:" + "1" * 64
    foreign = app.artifacts.put("tenant-b", [b"tenant-b's own log\n"], stored_by="b", media_type="text/plain")
    first = 1 if unit == "lines" else 0
    theirs = foreign.meta.artifact_id
    for aid, reason in ((missing, "unknown_reference"), (theirs, "unknown_reference"), (ours, "invalid")):
        for ref in ({"artifact": aid, unit: [first, 10**15]}, f"{aid}#{unit}={first}-{'9' * 40}"):
            outcome = submit(app, "specialist", [obs("obs-1", evidence_ref=ref)])
            assert (outcome["ok"], outcome.get("reason"), outcome.get("field")) == (
                False,
                reason,
                "items[0].evidence_ref",
            ), (ref, outcome)
    for malformed in (f"{ours}#lines=0-3", f"{ours}#lines=4-3", f"{ours}#pages=1-2", f"{ours}#lines=1-"):
        outcome = submit(app, "specialist", [obs("obs-1", evidence_ref=malformed)])
        assert (outcome["ok"], outcome.get("reason")) == (False, "invalid"), (malformed, outcome)
    assert app.ledger.head("ws-1") == 1


def test_a_work_results_observation_may_cite_too(app: App) -> None:
    submit(app, "operator", [open_item()])
    aid = artifact(app)
    submit(app, "planner", [{"type": "work_request", "request_id": "r-1", "kind": "logs", "target": "auth"}])
    submit(app, "specialist", [{"type": "work_claim", "request_id": "r-1", "lease_s": 60}])
    result = {
        "type": "work_result",
        "request_id": "r-1",
        "generation": 1,
        "status": "completed",
        "summary": "failures",
        "observation": {k: v for k, v in obs("obs-9", evidence_ref=f"{aid}#lines=1-1").items() if k != "type"},
    }
    outcome = submit(app, "specialist", [result])
    assert outcome["ok"], outcome
    assert app.ledger.read("ws-1", after=3)[0].decisions[0]["excerpt"]["lines"] == [1, 1]
