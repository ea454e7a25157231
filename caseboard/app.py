"""The composition root: the one place that sees every part and wires them from settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from caseboard.coordinator.service import Coordinator
from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.projections import Workspaces
from caseboard.settings import Settings


@dataclass
class App:
    settings: Settings
    ledger: EventsourcingLedger
    workspaces: Workspaces
    coordinators: dict[bool, Coordinator] = field(default_factory=dict)

    def coordinator(self, *, trust_timestamps: bool = False) -> Coordinator:
        if trust_timestamps not in self.coordinators:
            self.coordinators[trust_timestamps] = Coordinator(
                self.ledger, self.workspaces, trust_timestamps=trust_timestamps
            )
        return self.coordinators[trust_timestamps]

    def close(self) -> None:
        self.ledger.close()


def build_app(settings: Settings, *, database_url: str | None = None) -> App:
    ledger = open_ledger(database_url or settings.database_url, pool_size=settings.pool_size)
    return App(settings=settings, ledger=ledger, workspaces=Workspaces(ledger))
