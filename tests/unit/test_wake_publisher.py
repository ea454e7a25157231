"""What enqueuing tells the consumers (docs/adr/0184): a lone message's queue is published at once; a stream of
messages costs about one PUBLISH a queue every ``PUBLISH_GAP_S``, not one a message; and no queue is left
unannounced after its last message."""

from __future__ import annotations

import threading
import time
from typing import Any

from caseboard.dispatcher.waking import PUBLISH_GAP_S, Bells


class Recorder:
    """Stands in for the Redis client: notes each PUBLISH and when it came."""

    def __init__(self) -> None:
        self.published: list[tuple[float, set[str]]] = []
        self.event = threading.Event()

    def publish(self, channel: str, data: str) -> int:
        assert channel == "ns:wake"
        self.published.append((time.monotonic(), set(data.split())))
        self.event.set()
        return 0


def _bells() -> tuple[Bells, Recorder]:
    recorder = Recorder()
    client: Any = recorder
    return Bells(client, "ns"), recorder


def test_a_lone_message_is_announced_at_once() -> None:
    bells, recorder = _bells()
    try:
        sent = time.monotonic()
        bells.announce("caseboard.handoff")
        assert recorder.event.wait(5)
        at, queues = recorder.published[0]
        assert queues == {"caseboard.handoff"}
        assert at - sent < 0.1  # not held for a gap: nothing was published before it
        time.sleep(PUBLISH_GAP_S * 2)
        recorder.event.clear()
        sent = time.monotonic()
        bells.announce("caseboard.snapshot")  # another queue, its gap long over
        assert recorder.event.wait(5)
        assert recorder.published[-1][1] == {"caseboard.snapshot"}
        assert recorder.published[-1][0] - sent < 0.1
    finally:
        bells.close()


def test_a_stream_is_announced_once_a_gap_and_nothing_is_left_unannounced() -> None:
    bells, recorder = _bells()
    queues = ["caseboard.history", "caseboard.snapshot", "caseboard.reporter"]
    try:
        started = time.monotonic()
        last: dict[str, float] = {}
        for n in range(3000):
            queue = queues[n % 3]
            bells.announce(queue)
            last[queue] = time.monotonic()
            if n % 100 == 0:
                time.sleep(0.001)  # the stream lasts a while, as a dispatcher's sends do
        took = time.monotonic() - started
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not all(
            any(queue in named and at >= last[queue] for at, named in recorder.published) for queue in queues
        ):
            time.sleep(0.01)
    finally:
        bells.close()
    for queue in queues:  # each queue was published after its last message
        assert any(queue in named and at >= last[queue] for at, named in recorder.published), queue
    # about one PUBLISH a gap for the three queues together (they go out together), never one a message
    assert len(recorder.published) <= 3 * (took / PUBLISH_GAP_S + 2), (len(recorder.published), took)
    assert len(recorder.published) < 1000
