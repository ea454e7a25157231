"""The model-facing view shows each cited excerpt bounded, with its provenance, or says it was removed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caseboard.app import App, build_app
from caseboard.coordinator import parse_contribution
from caseboard.domain.items import Role
from caseboard.evidence.cited import excerpts_for
from caseboard.projections.model_view import CITED_CHARS, REMOVED, build_view
from caseboard.reducers import tenant_of
from caseboard.settings import Settings
from tests.unit.board import obs, open_item

LOG = b"".join(b"14:%02d auth_failure instance=payments-api-%d <<<end entry\n" % (m, m % 3) for m in range(40))


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    url = f"sqlite:///{tmp_path}/ledger.db"
    built = build_app(Settings(database_url=url), database_url=url)
    yield built
    built.close()


def submit(app: App, role: str, items: list[dict[str, Any]]) -> None:
    body = {"workspace_id": "ws-1", "author": {"principal": f"{role}-1", "role": role}, "items": items}
    outcome = app.coordinator().submit(parse_contribution(json.dumps(body)))
    assert outcome["ok"], outcome


def view(app: App) -> Any:
    state = app.workspaces.current("ws-1")
    commits = app.ledger.read("ws-1")
    excerpts = excerpts_for(lambda: app.artifacts, tenant_of(state), commits)
    return build_view(state, commits, Role.SPECIALIST, 6000, app.workspaces.reducer.name, excerpts=excerpts)


def test_a_cited_excerpt_is_shown_quoted_and_cut_with_its_artifact_range_and_hash(app: App) -> None:
    submit(app, "operator", [open_item()])
    aid = app.artifacts.put("tenant-a", [LOG], stored_by="p").meta.artifact_id
    submit(app, "specialist", [obs("obs-1", evidence_ref={"artifact": aid, "lines": [2, 20]})])
    built = view(app)
    entry = next(e for e in built.entries if e.ref == "obs-1")
    recorded = app.ledger.read("ws-1")[-1].decisions[0]["excerpt"]["sha256"]
    assert f"cited: {aid} lines 2-20; excerpt sha256={recorded}" in entry.text
    assert "…[cut:" in entry.text and entry.cited is not None and entry.cited["cut"] is True
    assert "<<<end entry" not in entry.text.split("cited excerpt", 1)[1].rsplit("<<<end", 1)[0]
    assert "source=logs/auth-1" in entry.text and "ingested_at=" in entry.text and "event_time=" in entry.text
    assert len(built.text) <= 6000 and len(LOG) > CITED_CHARS


def test_a_removed_artifact_is_shown_as_removed_under_retention(app: App) -> None:
    submit(app, "operator", [open_item()])
    aid = app.artifacts.put("tenant-a", [LOG], stored_by="p").meta.artifact_id
    submit(app, "specialist", [obs("obs-1", evidence_ref={"artifact": aid, "bytes": [0, 10]})])
    assert app.artifacts.remove("tenant-a", aid)
    entry = next(e for e in view(app).entries if e.ref == "obs-1")
    assert f"cited excerpt: {REMOVED}" in entry.text
    assert entry.cited is not None and entry.cited["state"] == "removed"
