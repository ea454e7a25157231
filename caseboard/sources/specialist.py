"""``caseboard specialist --source NAME``: a source as a participant, for one tenant's workspaces.

It is a worker participant (``workers/runtime.py``): the dispatcher's notifications reach it on the queues of
its kinds (``ConsumerHost``, as for ``caseboard agent``); on a request of its kind that is open it claims; on
one it holds it runs the query (``record.ask``) and reports (``record.record``) through the coordinator, the
raw response kept in the tenant's artifact store. A notification of another tenant's workspace is left alone.
A result is made once per claim: a version conflict resubmits it unchanged rather than querying again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog

from caseboard.dispatcher.notification import Notification
from caseboard.domain.items import Role
from caseboard.evidence.model import ArtifactStore
from caseboard.sources.base import Source
from caseboard.sources.config import SourceConfig
from caseboard.sources.record import ask, record
from caseboard.workers.runtime import View

log = structlog.get_logger("caseboard.sources")


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class SourceSpecialist:
    name: str
    source: Source
    config: SourceConfig
    tenant: str
    artifacts: Callable[[], ArtifactStore]
    principal: str
    kinds: tuple[str, ...]
    role: Role = Role.SPECIALIST
    lease_s: int = 300
    clock: Callable[[], datetime] = _now
    _made: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)

    def contribute(self, notification: Notification, view: View) -> list[dict[str, Any]] | None:
        if notification.kind != "work_requested" or notification.subject is None:
            return None
        if view.get("scope", {}).get("tenant_id") != self.tenant:
            return None  # another tenant's workspace: this specialist acts for one tenant only
        work = next((w for w in view["work"] if w["request_id"] == notification.subject), None)
        if work is None or work["kind"] not in self.kinds:
            return None
        if work["status"] == "awaiting_result":
            return [{"type": "work_claim", "request_id": work["request_id"], "lease_s": self.lease_s}]
        if work["status"] != "claimed" or work["holder"] != self.principal:
            return None
        made = (work["request_id"], work["generation"])
        if made not in self._made:
            self._made = {made: self.answer(work["request_id"], work["generation"], work["target"])}
        return self._made[made]

    def answer(self, request_id: str, generation: int, target: str) -> list[dict[str, Any]]:
        """The items that report on ``target``: the query run, recorded."""
        ran = ask(self.source, target, self.config, clock=self.clock)

        def store(data: bytes, media_type: str) -> str:
            stored = self.artifacts().put(
                self.tenant,
                [data],
                stored_by=self.principal,
                media_type=media_type,
                source_system=self.config.system or self.name,
                durable=False,  # the result that cites it is the durable commit (docs/adr/0177)
            )
            return stored.meta.artifact_id

        recorded = record(
            ran,
            name=self.name,
            config=self.config,
            request_id=request_id,
            generation=generation,
            store=store,
            now=self.clock(),
        )
        log.info(
            "source_query",
            source=self.name,
            request_id=request_id,
            operation=ran.query.operation if ran.query else None,
            elapsed_ms=round(ran.elapsed_ms, 3),
            status=recorded.items[0]["status"],
            incomplete=recorded.items[0]["query"]["incomplete"],
        )
        return recorded.items
