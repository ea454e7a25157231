"""What the HTTP layer works with, handed to ``create_app`` by the composition root."""

from __future__ import annotations

from dataclasses import dataclass, field

from caseboard.api.metrics import Metrics
from caseboard.app import App
from caseboard.keys import KeyStore


@dataclass
class Services:
    app: App
    keys: KeyStore
    trust_timestamps: bool = False
    poll_interval_s: float = 0.2
    metrics: Metrics = field(default_factory=Metrics)
