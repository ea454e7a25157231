"""The broker seam: dramatiq on Redis in production, dramatiq's in-process ``StubBroker`` when embedded.

Nothing here runs at import: brokers are built from settings and passed to whoever needs one; actors are
declared on the broker they are given (a dramatiq actor would otherwise capture the global broker).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import dramatiq
import structlog
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import Middleware

from caseboard.dispatcher.notification import Notification
from caseboard.domain.errors import CaseboardError

ACTOR_PREFIX = "caseboard_notify"
HAND_BACKS = 8
"""How often a notification goes back to its shared queue while no consumer of its tenant has announced itself
(after 50 ms, doubling: about 13 s in all) before it is left to the dispatcher's re-drive (docs/adr/0183)."""
PRESENCE_TTL_S = 15.0
"""How long a consumer's announcement lasts; a running process renews it every third of that (``Announcing``)."""
RESTART_GRACE_S = 10.0
"""How long the announcement of a process that stops outlives it (``Announcing``): what is passed on to its
queues meanwhile waits there for the process that replaces it, where a participant's turn found nobody announced
and was absorbed as a pass (docs/adr/0192). A process that does not come back leaves it to the re-drive."""


@dataclass(frozen=True)
class Elsewhere:
    """What a consumer's ``handle`` answers for a notification of a workspace it does not act for (another
    tenant's): the notification's own (shared) ``queue`` and the ``tenant`` it belongs to, None when that is
    not known; ``runner``: for one whose participant it does not run, the runner queue where a process that
    runs it has announced itself (``runner_queue``, docs/adr/0186, 0187). The actor passes it on (``pass_on``);
    any other answer (None) means the message is done with."""

    queue: str
    tenant: str | None
    runner: str | None = None


log = structlog.get_logger("caseboard.broker")


class BrokerUnavailable(CaseboardError):
    """The broker could not take a message (Redis down, restarting, unreachable)."""


def enqueue(
    broker: dramatiq.Broker,
    message: dramatiq.Message[Any] | None,
    *,
    declare: str | None = None,
    delay_ms: int | None = None,
) -> None:
    """Hands one message to the broker (or declares a queue), to be taken after ``delay_ms`` when given; broker
    failures become ``BrokerUnavailable``."""
    import redis

    try:
        if declare is not None:
            broker.declare_queue(declare)
        if message is not None:
            broker.enqueue(message, delay=delay_ms)
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
    from caseboard.dispatcher.waking import WakingRedisBroker  # imports redis: only where a broker is made

    return WakingRedisBroker(
        url=config.url,
        namespace=config.namespace,
        heartbeat_timeout=config.heartbeat_ms,
        maintenance_chance=config.maintenance_chance,
    )


def actor_name(queue: str) -> str:
    return f"{ACTOR_PREFIX}_{queue.replace('.', '_').replace('-', '_')}"


def message_for(notification: Notification) -> dramatiq.Message[Any]:
    return message_from(notification.queue, notification.model_dump_json(exclude_none=True))


def message_from(queue: str, body: str | dict[str, Any]) -> dramatiq.Message[Any]:
    """The message of one notification: ``body`` as JSON text (as stored) or already decoded."""
    args = json.loads(body) if isinstance(body, str) else body
    return dramatiq.Message(queue_name=queue, actor_name=actor_name(queue), args=(args,), kwargs={}, options={})


def tenant_queue(queue: str, tenant: str) -> str:
    """The queue where ``queue``'s notifications of ``tenant`` go when another tenant's process took them: only
    that tenant's processes consume it (a tenant id may hold characters a queue name may not, so it is hashed)."""
    return f"{queue}.tenant-{hashlib.sha256(tenant.encode()).hexdigest()[:16]}"


def runner_queue(queue: str, tenant: str | None) -> str:
    """The queue where ``queue``'s notifications of ``tenant`` go when a process that does not run their
    participant took them: only the tenant's processes that run it consume it (docs/adr/0186). ``tenant`` None:
    the queue of the operator-wide processes (``--all-tenants``) that run it, where any tenant's go when none
    of their own tenant's does (docs/adr/0187)."""
    return f"{queue}.run" if tenant is None else tenant_queue(queue, tenant) + ".run"


def declare_consumer(
    broker: dramatiq.Broker,
    queue: str,
    handle: Callable[[dict[str, Any]], Elsewhere | None],
    *,
    max_retries: int = 5,
    priority: int = 0,
    presence: Presence | None = None,
) -> None:
    """Declares the actor that takes ``queue``'s messages on ``broker`` (explicitly, never the global one).
    ``priority``: among the messages a worker has fetched, the lower goes first (dramatiq's actor priority);
    ``presence``: where the actor learns whether a tenant's processes run, to pass their notifications on."""

    if actor_name(queue) in broker.actors:
        return

    def consume(body: dict[str, Any]) -> None:
        answer = handle(body)
        if isinstance(answer, Elsewhere):
            pass_on(broker, presence, answer, body)

    consume.__name__ = actor_name(queue)
    dramatiq.actor(
        broker=broker,
        queue_name=queue,
        actor_name=actor_name(queue),
        max_retries=max_retries,
        priority=priority,
        min_backoff=50,
        max_backoff=2000,
    )(consume)


def pass_on(broker: dramatiq.Broker, presence: Presence | None, where: Elsewhere, body: dict[str, Any]) -> None:
    """Send another tenant's notification where a process of its tenant takes it (docs/adr/0183): at once to
    that tenant's own queue (a participant's notification: to ``where.runner``, docs/adr/0186) when one has
    announced itself there; else back to its shared queue after 50 ms,
    doubling with each hand-back, in case one starts or an operator-wide process takes it there; after
    ``HAND_BACKS`` of those, nowhere: the dispatcher re-drives it. The message taken is done with either way,
    and a broker that does not take the new one leaves the notification to the re-drive too. A runner queue
    was found announced a moment ago (``ConsumerHost._run_elsewhere``): it is not asked again."""
    own = where.runner
    if own is None and where.tenant is not None:
        own = tenant_queue(where.queue, where.tenant)
    try:
        if own is not None and presence is not None and (own == where.runner or presence.present(own)):
            enqueue(broker, message_from(own, body))
            return
        times = int(body.get("handed_back") or 0) + 1
        if times > HAND_BACKS:
            log.info("notification_left_to_redrive", queue=where.queue, notification_id=body.get("id"))
            return
        enqueue(broker, message_from(where.queue, {**body, "handed_back": times}), delay_ms=50 * 2 ** (times - 1))
    except BrokerUnavailable as error:
        log.warning("notification_pass_on_failed", queue=where.queue, notification_id=body.get("id"), error=str(error))


class Presence:
    """Which queues a running process consumes, in Redis beside the broker's own keys: a process of one tenant
    announces its tenant's own queues (``tenant_queue``) while it runs, each announcement lasting ``ttl_s``, and
    shortens them to a restart's grace when it stops; another process asks before passing a notification on. ``client``:
    the broker's own Redis client (``RedisBroker.client``), ``namespace`` its namespace."""

    def __init__(self, client: Any, namespace: str, ttl_s: float = PRESENCE_TTL_S) -> None:
        self.client = client
        self.namespace = namespace
        self.ttl_ms = int(ttl_s * 1000)

    def _key(self, queue: str) -> str:
        return f"{self.namespace}:consumed:{queue}"

    def announce(self, queues: Iterable[str]) -> None:
        pipe = self.client.pipeline(transaction=False)
        for queue in queues:
            pipe.set(self._key(queue), b"1", px=self.ttl_ms)
        pipe.execute()

    def linger(self, queues: Iterable[str], seconds: float) -> None:
        """The announcements of ``queues`` end ``seconds`` from now (``RESTART_GRACE_S``)."""
        pipe = self.client.pipeline(transaction=False)
        for queue in queues:
            pipe.pexpire(self._key(queue), int(seconds * 1000))
        pipe.execute()

    def present(self, queue: str) -> bool:
        """Whether a process consuming ``queue`` announced itself within the last ``ttl_s``; a broker that does
        not answer raises ``BrokerUnavailable``."""
        import redis

        try:
            return bool(self.client.exists(self._key(queue)))
        except redis.RedisError as error:
            raise BrokerUnavailable(f"the broker did not answer: {error}") from error


class Announcing(Middleware):
    """Announces ``queues`` on ``presence`` from before a dramatiq worker consumes until it begins to shut down,
    renewed every third of the announcement's life, then for ``RESTART_GRACE_S`` more (a restart's: docs/adr/0192);
    a renewal the broker does not take is tried at the next.
    ``consumers_announced`` is logged when the announcement holds again, a warning when it stops holding."""

    def __init__(self, presence: Presence, queues: list[str]) -> None:
        self.presence = presence
        self.queues = queues
        self.announced: bool | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def renew(self) -> None:
        import redis

        try:
            self.presence.announce(self.queues)
        except redis.RedisError as error:
            if self.announced is not False:
                log.warning("consumers_announcement_failed", error=str(error), queues=len(self.queues))
            self.announced = False
            return
        if not self.announced:
            log.info("consumers_announced", queues=len(self.queues))
        self.announced = True

    def before_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self.renew()
        every = self.presence.ttl_ms / 3000

        def renew() -> None:
            while not self._stop.wait(every):
                self.renew()

        self._thread = threading.Thread(target=renew, name="caseboard-announce", daemon=True)
        self._thread.start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        import redis

        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with contextlib.suppress(redis.RedisError):  # else the announcements lapse on their own
            self.presence.linger(self.queues, RESTART_GRACE_S)


@dataclass(frozen=True)
class BrokerHealth:
    """Whether the broker answers: ``outbox status``, the health endpoint and the worker's watch ask it."""

    up: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"broker": "up" if self.up else "down", "broker_detail": self.detail}


def where(url: str) -> str:
    """A Redis URL without its credentials, for messages."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return f"unix:{parts.path}"
    try:
        port = parts.port or 6379
    except ValueError:
        port = 6379
    return f"{parts.scheme}://{parts.hostname or 'localhost'}:{port}{parts.path or '/0'}"


def check_broker(url: str | None, timeout_s: float = 1.0) -> BrokerHealth:
    """One PING with a short timeout; None is the in-process broker, always up."""
    if url is None:
        return BrokerHealth(True, "the in-process broker")
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    try:
        client.ping()
    except redis.RedisError as error:
        return BrokerHealth(False, f"Redis at {where(url)} does not answer: {error}")
    finally:
        client.close()
    return BrokerHealth(True, f"Redis at {where(url)} answers")


class BrokerWatch:
    """Probes the broker while a worker runs, and backs off while it is down.

    While the broker answers, every ``step`` probes it once. When a probe fails, ``on_down`` runs (the
    worker pauses its consumers, which would otherwise reconnect and log every few seconds per queue),
    ``broker_unavailable`` is logged with the delay before the next probe, and the delay doubles from
    ``first_s`` up to ``max_s``. The first probe that succeeds runs ``on_up`` and logs ``broker_available``.
    """

    def __init__(
        self,
        probe: Callable[[], BrokerHealth],
        on_down: Callable[[], None] = lambda: None,
        on_up: Callable[[], None] = lambda: None,
        *,
        first_s: float = 1.0,
        max_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.probe = probe
        self.on_down = on_down
        self.on_up = on_up
        self.first_s = first_s
        self.max_s = max_s
        self.clock = clock
        self.down_since: float | None = None
        self.delay_s = 0.0
        self.next_probe = 0.0
        self.failures = 0

    @property
    def up(self) -> bool:
        return self.down_since is None

    def step(self) -> float:
        """Probe when due; the seconds until the next probe is due (0 while the broker is up)."""
        now = self.clock()
        if not self.up and now < self.next_probe:
            return self.next_probe - now
        health = self.probe()
        if health.up:
            if self.down_since is not None:
                log.info("broker_available", down_s=round(now - self.down_since, 3), failed_probes=self.failures)
                self.down_since, self.failures, self.delay_s = None, 0, 0.0
                self.on_up()
            return 0.0
        if self.down_since is None:
            self.down_since = now
            self.on_down()
        self.failures += 1
        self.delay_s = min(self.max_s, self.delay_s * 2 if self.delay_s else self.first_s)
        self.next_probe = now + self.delay_s
        log.warning("broker_unavailable", error=health.detail, failed_probes=self.failures, retry_in_s=self.delay_s)
        return self.delay_s
