"""The composition root: the one place that sees every part and wires them from settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg

from caseboard.coordinator.service import Coordinator
from caseboard.database_url import DatabaseUrl
from caseboard.dispatcher.store import DispatchStore
from caseboard.dispatcher.wakeup import CommitListener, CommitNotifier
from caseboard.domain.errors import LedgerUnavailable
from caseboard.domain.workspace_key import tenant_part
from caseboard.evidence import ArtifactStore, open_artifact_store
from caseboard.handoff.status import handoffs
from caseboard.knowledge import KnowledgeWriter, open_knowledge_store
from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.projections import Workspaces
from caseboard.settings import Settings


@dataclass
class App:
    settings: Settings
    ledger: EventsourcingLedger
    workspaces: Workspaces
    coordinators: dict[bool, Coordinator] = field(default_factory=dict)
    database_url: str = ""
    database: DatabaseUrl | None = None
    """``database_url`` parsed; None for the tests' ``memory://``."""
    notifier: Any = None
    _artifacts: ArtifactStore | None = None
    _knowledge: Any = None
    _dispatch: DispatchStore | None = None

    @property
    def on_postgres(self) -> bool:
        """The ledger is PostgreSQL (the dispatcher and workers then run beside it over Redis)."""
        return self.database is not None and self.database.kind == "postgresql"

    @property
    def artifacts(self) -> ArtifactStore:
        """The artifact store that goes with the ledger, opened on first use (docs/adr/0080)."""
        if self._artifacts is None:
            self._artifacts = open_artifact_store(
                self.database or self.database_url, max_bytes=self.settings.artifact_max_bytes
            )
        return self._artifacts

    def knowledge(self) -> KnowledgeWriter:
        """The knowledge store that goes with the ledger and its writer, caught up with the ledger's
        notification log (docs/knowledge.md); opened on first use."""
        if self._knowledge is None:
            self._knowledge = KnowledgeWriter(self.ledger, open_knowledge_store(self.database or self.database_url))
        writer: KnowledgeWriter = self._knowledge
        writer.catch_up()
        return writer

    def handoffs(self, key: str) -> list[dict[str, Any]]:
        """The handoffs of the workspace ``key`` with every delivery attempt (docs/pilot.md), from the ledger and
        the dispatch store (opened on first use); empty for the tests' in-memory ledger, which has none."""
        if self.database is None:
            return []
        if self._dispatch is None:
            self._dispatch = DispatchStore(self.database)
        tenant = tenant_part(key) or self.workspaces.tenant_of(key, 5.0) or ""
        webhooks = len(self.settings.tenants.of(tenant).webhooks)
        return handoffs(key, self.ledger.iter_commits(key), self._dispatch.handoff_attempts(key), webhooks)

    def coordinator(self, *, trust_timestamps: bool = False) -> Coordinator:
        if trust_timestamps not in self.coordinators:
            self.coordinators[trust_timestamps] = Coordinator(
                self.ledger, self.workspaces, trust_timestamps=trust_timestamps, artifacts=lambda: self.artifacts
            )
        return self.coordinators[trust_timestamps]

    def listen_for_commits(self) -> CommitListener:
        """A LISTEN for the NOTIFY after each commit (ADR 0012), where ``ledger.capabilities.live``; the
        ``/events`` streams' follower waits on it. ``LedgerUnavailable`` while the database is out of reach."""
        try:
            return CommitListener(self.database or self.database_url)
        except psycopg.Error as error:
            raise LedgerUnavailable(f"cannot listen for commits: {' '.join(str(error).split())}") from error

    def close(self) -> None:
        if self.notifier is not None:
            self.notifier.close()
        if self._artifacts is not None:
            self._artifacts.close()
        if self._knowledge is not None:
            self._knowledge.store.close()
        if self._dispatch is not None:
            self._dispatch.close()
        self.ledger.close()


def build_app(settings: Settings, *, database_url: str | None = None) -> App:
    url = database_url or settings.database_url
    database = None  # memory://, the tests' in-memory ledger
    if url != "memory://":
        database = settings.database if url == settings.database_url else DatabaseUrl.parse(url)
    ledger = open_ledger(database or url, pool_size=settings.pool_size)
    ledger.sign_snapshots(None if settings.snapshot_key is None else settings.snapshot_key.encode())
    app = App(
        settings=settings,
        ledger=ledger,
        workspaces=Workspaces(ledger, settings.current_reducer, max_commits=settings.cache_commits),
        database_url=url,
        database=database,
    )
    if ledger.capabilities.live:  # wake the dispatcher after each commit (ADR 0012)
        app.notifier = CommitNotifier(database or url)
        ledger.after_append(app.notifier.wake)
    return app
