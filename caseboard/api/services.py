"""What the HTTP layer works with, handed to ``create_app`` by the composition root."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from caseboard.agent.budget import spent
from caseboard.agent.plugin import DEFAULT_CAST
from caseboard.api.event_hub import EventHub
from caseboard.api.metrics import Metrics
from caseboard.app import App
from caseboard.domain.commit import Commit
from caseboard.keys import ApiKey, KeyStore, hash_secret
from caseboard.projections.directory import Directory
from caseboard.replay.audit import ReadGuard, guard_for


class KeyCache:
    """Authenticated keys by the SHA-256 of their token, each for ``ttl_s`` seconds."""

    def __init__(self, ttl_s: float, capacity: int = 10_000) -> None:
        self.ttl_s = ttl_s
        self.capacity = capacity
        self._entries: dict[str, tuple[float, ApiKey]] = {}

    def get(self, token: str) -> ApiKey | None:
        entry = self._entries.get(hash_secret(token))
        if entry is None or entry[0] < time.monotonic():
            return None
        return entry[1]

    def put(self, token: str, key: ApiKey) -> None:
        if self.ttl_s <= 0:
            return
        if len(self._entries) >= self.capacity:
            self._entries.clear()
        self._entries[hash_secret(token)] = (time.monotonic() + self.ttl_s, key)

    def forget(self, token: str) -> None:
        """The store says the key is no longer active: no request is let in on the cached answer."""
        self._entries.pop(hash_secret(token), None)


def charged(commit: Commit) -> tuple[int, int]:
    """The model calls and tokens a commit's judgments charge to its workspace's budget (ADR 0112)."""
    found = spent([commit], DEFAULT_CAST)  # caseboard's own participants' calls, as their budget counts them
    return found.calls, found.tokens


@dataclass
class Services:
    app: App
    keys: KeyStore
    trust_timestamps: bool = False
    poll_interval_s: float = 0.2
    metrics: Metrics = field(default_factory=Metrics)
    key_cache: KeyCache = field(default_factory=lambda: KeyCache(1.0))
    events: EventHub = field(init=False)
    """The followers of the ``/events`` streams (``event_hub.py``); closed at server shutdown."""
    directory: Directory = field(init=False)
    """Every workspace's row for ``GET /workspaces`` and the console's list, from the notification log (ADR 0151)."""

    def __post_init__(self) -> None:
        listen = self.app.listen_for_commits if self.app.ledger.capabilities.live else None
        self.events = EventHub(CheckedCommits(guard_for(self.app.ledger)), listen, self.poll_interval_s)
        self.directory = Directory(
            self.app.ledger.outbox, self.app.workspaces.reducer, self.app.settings.model_calls_per_cycle, charged
        )


class CheckedCommits:
    """The ledger as the events' follower reads it: every commit through the chain's guard (ADR 0144)."""

    def __init__(self, guard: ReadGuard) -> None:
        self.guard = guard

    def read(self, workspace_id: str, after: int = 0, upto: int | None = None) -> list[Commit]:
        return self.guard.commits(workspace_id, after, upto)

    def head(self, workspace_id: str) -> int:
        return self.guard.ledger.head(workspace_id)
