"""The broker seam: dramatiq on Redis in production, dramatiq's in-process ``StubBroker`` when embedded.

Nothing here runs at import: brokers are built from settings and passed to whoever needs one; actors are
declared on the broker they are given (a dramatiq actor would otherwise capture the global broker).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dramatiq
from dramatiq.brokers.stub import StubBroker

from caseboard.dispatcher.notification import Notification
from caseboard.domain.errors import CaseboardError

ACTOR_PREFIX = "caseboard_notify"


class BrokerUnavailable(CaseboardError):
    """The broker could not take a message (Redis down, restarting, unreachable)."""


def enqueue(broker: dramatiq.Broker, message: dramatiq.Message[Any] | None, *, declare: str | None = None) -> None:
    """Hands one message to the broker (or declares a queue); broker failures become ``BrokerUnavailable``."""
    import redis

    try:
        if declare is not None:
            broker.declare_queue(declare)
        if message is not None:
            broker.enqueue(message)
    except (redis.RedisError, dramatiq.errors.BrokerConnectionError) as error:
        raise BrokerUnavailable(f"the broker did not accept a message: {error}") from error


@dataclass(frozen=True)
class BrokerConfig:
    url: str | None = None
    """``redis://...`` for Redis; None for the in-process broker."""
    namespace: str = "caseboard"
    heartbeat_ms: int = 60_000
    maintenance_chance: int = 1000


def make_broker(config: BrokerConfig) -> dramatiq.Broker:
    if config.url is None:
        broker = StubBroker()
        broker.emit_after("process_boot")
        return broker
    from dramatiq.brokers.redis import RedisBroker

    return RedisBroker(  # type: ignore[no-untyped-call]
        url=config.url,
        namespace=config.namespace,
        heartbeat_timeout=config.heartbeat_ms,
        maintenance_chance=config.maintenance_chance,
    )


def actor_name(queue: str) -> str:
    return f"{ACTOR_PREFIX}_{queue.replace('.', '_').replace('-', '_')}"


def message_for(notification: Notification) -> dramatiq.Message[Any]:
    return message_from(notification.queue, notification.model_dump_json(exclude_none=True))


def message_from(queue: str, body: str) -> dramatiq.Message[Any]:
    return dramatiq.Message(
        queue_name=queue, actor_name=actor_name(queue), args=(json.loads(body),), kwargs={}, options={}
    )


def declare_consumer(
    broker: dramatiq.Broker, queue: str, handle: Callable[[dict[str, Any]], None], *, max_retries: int = 5
) -> None:
    """Declares the actor that takes ``queue``'s messages on ``broker`` (explicitly, never the global one)."""

    if actor_name(queue) in broker.actors:
        return

    def consume(body: dict[str, Any]) -> None:
        handle(body)

    consume.__name__ = actor_name(queue)
    dramatiq.actor(
        broker=broker,
        queue_name=queue,
        actor_name=actor_name(queue),
        max_retries=max_retries,
        min_backoff=50,
        max_backoff=2000,
    )(consume)
