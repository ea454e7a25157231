"""A workspace on a real embedded ledger, a planner's work request, and a source specialist answering it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from caseboard.app import App, build_app
from caseboard.coordinator import parse_contribution
from caseboard.dispatcher.notification import Notification, notification_id
from caseboard.domain.citations import Span
from caseboard.domain.outcome import Accepted
from caseboard.settings import Settings
from caseboard.sources.base import Source
from caseboard.sources.config import SourceConfig
from caseboard.sources.registry import SOURCES
from caseboard.sources.specialist import SourceSpecialist
from caseboard.workers.runtime import act
from tests.conftest import open_item

BUILT: list[Source] = []
WORKSPACE = "incident-042"
TENANT = "tenant-a"


@contextmanager
def embedded(tmp_path: Path) -> Iterator[App]:
    app = build_app(Settings(database_url=f"sqlite:///{tmp_path}/ledger.db"))
    try:
        submit(app, "operator-1", "operator", [open_item()])
        yield app
    finally:
        while BUILT:
            BUILT.pop().close()
        app.close()


def submit(app: App, principal: str, role: str, items: list[dict[str, Any]]) -> Accepted:
    body = {"workspace_id": WORKSPACE, "author": {"principal": principal, "role": role}, "items": items}
    outcome = app.coordinator().submit(parse_contribution(json.dumps(body)))
    assert isinstance(outcome, Accepted), outcome.as_json()
    return outcome


def specialist(app: App, name: str, config: SourceConfig, tenant: str = TENANT) -> SourceSpecialist:
    source = SOURCES.build(name, config)
    BUILT.append(source)
    return SourceSpecialist(name, source, config, tenant, lambda: app.artifacts, f"{name}-specialist", source.kinds)


def request_and_answer(app: App, who: SourceSpecialist, request_id: str, kind: str, target: Any) -> list[Any]:
    """The planner asks; the specialist claims, queries and reports; returns the commits after the request."""
    text = target if isinstance(target, str) else json.dumps(target)
    asked = submit(
        app, "planner-1", "planner", [{"type": "work_request", "request_id": request_id, "kind": kind, "target": text}]
    )
    act(app.coordinator(), who, work_requested(asked.workspace_version, request_id, kind))
    return list(app.ledger.read(WORKSPACE, after=asked.workspace_version))


def work_requested(version: int, request_id: str, kind: str) -> Notification:
    """The dispatcher's notification to the specialists of ``kind`` of a request committed at ``version``."""
    return Notification(
        id=notification_id(WORKSPACE, version, "work_requested", request_id),
        kind="work_requested",
        audience="specialist",
        workspace_id=WORKSPACE,
        workspace_version=version,
        subject=request_id,
        request_kind=kind,
    )


def excerpt(app: App, ref: str) -> bytes:
    artifact, _, span = ref.partition("#")
    unit, _, numbers = span.partition("=")
    first, last = (int(n) for n in numbers.split("-"))
    return b"".join(app.artifacts.excerpt(TENANT, artifact, Span.checked(unit, first, last)))  # type: ignore[arg-type]


def whole(app: App, artifact: str) -> bytes:
    return b"".join(app.artifacts.read(TENANT, artifact))
