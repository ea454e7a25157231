"""The broker watch: a down broker is probed with a doubling delay, consumers paused meanwhile, and every log
line, dramatiq's included, is caseboard's structured JSON."""

from __future__ import annotations

import io
import json
import logging
import socket
from collections.abc import Iterator

import pytest
import structlog
from structlog.testing import capture_logs

from caseboard.dispatcher.broker import BrokerHealth, BrokerWatch, check_broker
from caseboard.logs import configure_logging


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> Iterator[None]:
    yield
    structlog.reset_defaults()
    root = logging.getLogger()
    for handler in list(root.handlers):
        if type(handler).__name__ == "_Bridge":
            root.removeHandler(handler)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_down_broker_is_probed_with_a_doubling_delay_and_consumers_pause_once() -> None:
    clock, answers, calls = Clock(), [False] * 8 + [True], []
    probes: list[float] = []

    def probe() -> BrokerHealth:
        probes.append(clock.now)
        return BrokerHealth(answers.pop(0), "Redis at redis://127.0.0.1:1/0 does not answer")

    watch = BrokerWatch(
        probe, on_down=lambda: calls.append("pause"), on_up=lambda: calls.append("resume"), max_s=30, clock=clock
    )
    delays = []
    with capture_logs() as logs:
        while answers:
            wait = watch.step()
            if wait:
                delays.append(wait)
                assert watch.step() == wait  # not due yet: no probe
                clock.now += wait
    assert delays == [1, 2, 4, 8, 16, 30, 30, 30]
    assert len(probes) == 9
    assert calls == ["pause", "resume"]
    unavailable = [e for e in logs if e["event"] == "broker_unavailable"]
    assert [e["retry_in_s"] for e in unavailable] == delays
    assert [e["event"] for e in logs][-1] == "broker_available"
    assert watch.up


def test_a_broker_that_answers_is_probed_at_every_step_without_logging() -> None:
    watch = BrokerWatch(lambda: BrokerHealth(True, "answers"))
    with capture_logs() as logs:
        assert [watch.step() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert logs == []


def test_check_broker_says_a_redis_that_does_not_listen_is_down() -> None:
    health = check_broker(f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.5)
    assert not health.up
    assert health.to_dict()["broker"] == "down"
    assert "does not answer" in health.detail


def test_dramatiqs_own_log_records_are_rendered_as_caseboard_json_events() -> None:
    stream = io.StringIO()
    configure_logging("info", "json", stream)
    logger = logging.getLogger("dramatiq.worker.ConsumerThread(caseboard.planner)")
    logger.critical("Consumer encountered a connection error: %s", "Error 111 connecting to 127.0.0.1:1.")
    logger.info("Restarting consumer in %0.2f seconds.", 3.0)  # library chatter below warning is left out
    [line] = stream.getvalue().splitlines()
    event = json.loads(line)
    assert event["event"] == "broker_connection_error"
    assert event["level"] == "critical"
    assert event["logger"] == "dramatiq.worker.ConsumerThread(caseboard.planner)"
    assert "Error 111" in event["message"]
    assert event["timestamp"].endswith("Z")
