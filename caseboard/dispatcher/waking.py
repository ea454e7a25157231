"""Redis consumers that sleep until their queue has a message (docs/adr/0184).

dramatiq's Redis consumer fetches an empty queue again after its idle timeout, and a worker consumes some
thirty queues (each with its delay queue): at a 10 ms timeout an idle worker made ~9,000 Redis calls a second
and held a whole core of a two-core machine. Here every enqueue on the broker rings its queue's bell over Redis
pub/sub (``Bells``: one ``PUBLISH`` for all the queues enqueued on meanwhile, at most one each 5 ms), and a
consumer that found its queue empty waits for that bell, for at most the consumer's timeout
(``CASEBOARD_WORKER_POLL_MS``). The timeout now only finds what no bell announced: a message another broker
left behind, one put back by dramatiq's maintenance, one enqueued while the subscription was down (every bell
rings when it comes back).

A consumer also wakes when an acknowledgement frees its prefetch, and when the earliest of the delayed messages
it holds is due. The same timeout bounds how long dramatiq's worker threads wait for work, so a worker still
stops within it. Only dramatiq's public interfaces are used: ``RedisBroker.consume`` and ``close``, the
``Consumer`` it returns, and a middleware's ``after_enqueue`` hook.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import dramatiq
import redis
import structlog
from dramatiq.broker import Consumer, MessageProxy
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import Middleware

RESUBSCRIBE_MAX_S = 5.0
"""The longest the subscription waits before trying Redis again (0.1 s, doubling)."""
PUBLISH_GAP_S = 0.005
"""A queue is announced at most once in this time: a message on a queue not announced within it is announced at
once (with whatever else is waiting), others when it has passed, so that a stream of messages costs at most 200
PUBLISHes a second per queue, not one each (as the commit notifier's NOTIFY, ADR 0012)."""
LISTEN_S = 0.25
"""How long the subscriber waits for a message before it checks whether the bells were closed."""

log = structlog.get_logger("caseboard.broker")


class Bell:
    """One queue's bell: ``rung`` counts its rings; ``wait`` returns at the first ring after ``seen``."""

    def __init__(self) -> None:
        self.rung = 0
        self._condition = threading.Condition()

    def ring(self) -> None:
        with self._condition:
            self.rung += 1
            self._condition.notify_all()

    def wait(self, seen: int, timeout: float) -> None:
        with self._condition:
            self._condition.wait_for(lambda: self.rung != seen, timeout)


class Bells:
    """The bells of the queues consumed in this process, rung from Redis channel ``<namespace>:wake``, and the
    announcements of the queues enqueued on from this process. Each side runs a daemon thread, started when
    first needed and stopped by ``close``."""

    def __init__(self, client: redis.Redis, namespace: str) -> None:
        self.client = client
        self.channel = f"{namespace}:wake"
        self._bells: dict[str, Bell] = {}
        self._pending: set[str] = set()
        self._published: dict[str, float] = {}  # queue -> when it was last published (monotonic)
        self._lock = threading.Lock()
        self._announced = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._threads: dict[str, threading.Thread] = {}

    def bell(self, queue: str) -> Bell:
        with self._lock:
            bell = self._bells.get(queue)
            if bell is None:
                bell = self._bells[queue] = Bell()
            self._start("caseboard-wake-listen", self._listen)
        return bell

    def announce(self, queue: str) -> None:
        """A message was enqueued on ``queue``: its consumers, in any process, are woken."""
        with self._lock:
            # the publisher waits for the first queue, or for the end of the gap of those it holds: it is told of
            # a queue only when that changes, not of every message (each would cost the enqueuing thread a switch)
            first = not self._pending
            self._pending.add(queue)
            self._start("caseboard-wake-publish", self._publisher)
            if first or self._due_now(queue, time.monotonic()):
                self._announced.notify()

    def ring_all(self) -> None:
        with self._lock:
            bells = list(self._bells.values())
        for bell in bells:
            bell.ring()

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            self._announced.notify()
        self.ring_all()
        for thread in list(self._threads.values()):
            if thread is not threading.current_thread():
                thread.join(timeout=5)

    def _start(self, name: str, target: Any) -> None:
        """Under ``_lock``: the thread ``name`` runs, unless the bells are closed."""
        if name not in self._threads and not self._stop.is_set():
            thread = self._threads[name] = threading.Thread(target=target, name=name, daemon=True)
            thread.start()

    def _publisher(self) -> None:
        """PUBLISHes the queues announced, each at most once in ``PUBLISH_GAP_S`` (one PUBLISH names every queue
        waiting). A PUBLISH Redis does not take is not retried: the message it announced was not taken either,
        or is found at the consumers' timeout."""
        while True:
            with self._lock:
                queues = self._take_due()
                while not queues:
                    if self._stop.is_set():
                        return
                    waits = [self._published[queue] + PUBLISH_GAP_S for queue in self._pending]
                    self._announced.wait(max(0.0, min(waits) - time.monotonic()) if waits else None)
                    queues = self._take_due()
            try:
                self.client.publish(self.channel, " ".join(sorted(queues)))
            except Exception as error:  # the consumers fetch at their timeout instead
                if not isinstance(error, redis.RedisError | OSError):
                    log.warning("broker_wakeups_failed", error=repr(error))
            now = time.monotonic()
            with self._lock:
                self._published.update(dict.fromkeys(queues, now))

    def _due_now(self, queue: str, now: float) -> bool:
        return now - self._published.get(queue, -PUBLISH_GAP_S) >= PUBLISH_GAP_S

    def _take_due(self) -> set[str]:
        """Under ``_lock``: every queue waiting, taken, when one of them was not published in ``PUBLISH_GAP_S``."""
        now = time.monotonic()
        if any(self._due_now(queue, now) for queue in self._pending):
            queues, self._pending = self._pending, set()
            return queues
        return set()

    def _listen(self) -> None:
        """Rings the bells that each message names; rings them all at each (re)subscription, for what was
        enqueued while there was none. Redis down: tries again after 0.1 s, doubling up to RESUBSCRIBE_MAX_S."""
        delay = 0.1
        while not self._stop.is_set():
            pubsub = self.client.pubsub()
            try:
                pubsub.subscribe(self.channel)
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=LISTEN_S)
                    if message is None:
                        continue
                    if message["type"] == "subscribe":
                        delay = 0.1
                        self.ring_all()
                    elif message["type"] == "message":
                        self._ring(message["data"])
            except Exception as error:  # Redis down (the worker's watch says so) or, unexpected, anything else
                if not isinstance(error, redis.RedisError | OSError):  # the consumers fetch at their timeout meanwhile
                    log.warning("broker_wakeups_failed", error=repr(error), retry_in_s=delay)
                self._stop.wait(delay)
                delay = min(delay * 2, RESUBSCRIBE_MAX_S)
            finally:
                with contextlib.suppress(redis.RedisError, OSError):
                    pubsub.close()

    def _ring(self, data: bytes) -> None:
        with self._lock:
            bells = [self._bells.get(queue) for queue in data.decode(errors="replace").split()]
        for bell in bells:
            if bell is not None:
                bell.ring()


class WakingConsumer(Consumer):
    """dramatiq's Redis consumer of one queue (made with no idle sleep of its own), waiting on the queue's bell
    after a fetch that brought nothing: at most ``timeout_s``, less when a delayed message it holds falls due."""

    def __init__(self, inner: Consumer, bell: Bell, prefetch: int, timeout_s: float) -> None:
        self.inner = inner
        self.bell = bell
        self.prefetch = prefetch
        self.timeout_s = timeout_s
        self.outstanding = 0  # given out and not yet acknowledged, as dramatiq's own count
        self.due: dict[str, float] = {}  # message id -> eta (ms) of the delayed messages held
        self._lock = threading.Lock()

    def __iter__(self) -> WakingConsumer:
        return self

    def __next__(self) -> MessageProxy | None:
        seen = self.bell.rung
        message: MessageProxy | None = next(self.inner)
        if message is None:
            self.bell.wait(seen, self._idle_s())
            return None
        eta = message.options.get("eta")
        with self._lock:
            self.outstanding += 1
            if isinstance(eta, int | float):
                self.due[message.message_id] = eta
        return message

    def _idle_s(self) -> float:
        with self._lock:
            earliest = min(self.due.values(), default=None)
        if earliest is None:
            return self.timeout_s
        return max(0.0, min(self.timeout_s, earliest / 1000 - time.time()))

    def ack(self, message: MessageProxy) -> None:
        try:
            self.inner.ack(message)
        finally:
            self._done(message)

    def nack(self, message: MessageProxy) -> None:
        try:
            self.inner.nack(message)
        finally:
            self._done(message)

    def _done(self, message: MessageProxy) -> None:
        """One message less in hand; a consumer whose prefetch was full fetches again at once."""
        with self._lock:
            full = self.outstanding >= self.prefetch
            self.outstanding = max(0, self.outstanding - 1)
            self.due.pop(message.message_id, None)
        if full:
            self.bell.ring()

    def requeue(self, messages: Any) -> None:
        self.inner.requeue(messages)

    def close(self) -> None:
        self.inner.close()


class RingOnEnqueue(Middleware):
    """Announces the queue of each message enqueued through the broker."""

    def __init__(self, bells: Bells) -> None:
        self.bells = bells

    def after_enqueue(self, broker: dramatiq.Broker, message: dramatiq.Message[Any], delay: int | None) -> None:
        self.bells.announce(message.queue_name)


class WakingRedisBroker(RedisBroker):
    """dramatiq's ``RedisBroker`` whose consumers wait on their queue's bell instead of polling it."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)  # type: ignore[no-untyped-call]
        self.bells = Bells(self.client, self.namespace)
        self.add_middleware(RingOnEnqueue(self.bells))

    def consume(self, queue_name: str, prefetch: int = 1, timeout: int = 5000) -> Consumer:
        """``timeout``: the longest, in ms, an idle consumer waits for its bell before it fetches again."""
        inner = super().consume(queue_name, prefetch, 0)
        return WakingConsumer(inner, self.bells.bell(queue_name), prefetch, max(timeout, 1) / 1000)

    def close(self) -> None:
        """Stops the bells and closes the client's connections (dramatiq's own ``close`` leaves them open)."""
        self.bells.close()
        super().close()
        self.client.close()
        self.client.connection_pool.disconnect()  # the client was given its pool, so its close leaves the pool open
