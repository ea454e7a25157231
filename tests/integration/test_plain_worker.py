"""Nothing fabricated: a plain worker runs the consumers, the controller and the lease sweeper and never
contributes evidence; scripted participants run only when named (``--participant scripted``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from caseboard.app import App, build_app
from caseboard.cli.main import main
from caseboard.coordinator import parse_contribution
from caseboard.dispatcher.follower import DispatchConfig
from caseboard.dispatcher.store import DispatchStore
from caseboard.settings import Settings
from caseboard.workers.live import broker_for, build_dispatcher, build_host, start_worker
from caseboard.workers.plugins import available
from tests.conftest import open_item
from tests.e2e.procs import poll

EVIDENCE = {"observation", "work_claim", "work_result", "hypothesis", "verification"}


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> Iterator[None]:
    yield
    structlog.reset_defaults()


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    app = build_app(Settings(), database_url=f"sqlite:///{tmp_path}/ledger.db")
    yield app
    app.close()


def submit(app: App, principal: str, role: str, items: list[dict[str, object]]) -> None:
    line = json.dumps({"workspace_id": "ws-pilot", "author": {"principal": principal, "role": role}, "items": items})
    assert app.coordinator().submit(parse_contribution(line))["ok"]


def run_loop(app: App, participants: tuple[str, ...]) -> list[str]:
    """A pilot workspace with a log query waiting; the loop runs until every notification is processed."""
    submit(app, "oncall-operator", "operator", [open_item(max_investigation_cycles=1)])
    request = {"type": "work_request", "request_id": "log-query-001", "kind": "log_query", "target": "auth logs"}
    submit(app, "planner-1", "planner", [request])
    store = DispatchStore(app.database_url)
    broker = broker_for(app, in_process=True)
    host = build_host(app, store, kinds=("log_query",), turn_timeout_s=600, participants=participants)
    worker = start_worker(broker, host, threads=2)
    dispatcher = build_dispatcher(app, store, broker, DispatchConfig(poll_s=0.02, redrive_after_s=60))
    stop = threading.Event()
    follower = threading.Thread(target=dispatcher.run, args=(stop,), daemon=True)
    follower.start()
    try:

        def settled() -> bool:
            status = store.status("dispatcher")
            head = app.ledger.head("ws-pilot")
            return (
                head >= 2
                and status["delivered"] > 0
                and status["unprocessed"] == 0
                and (
                    not participants
                    or any(i.type == "work_result" for c in app.ledger.read("ws-pilot") for i in c.items)
                )
                and not dispatcher.outbox.pending(dispatcher.position)
            )

        poll("every notification processed", settled, timeout=60, every=0.05)
    finally:
        stop.set()
        follower.join(timeout=10)
        worker.stop()
        broker.close()
        store.close()
    return [item.type for commit in app.ledger.read("ws-pilot") for item in commit.items]


def test_a_plain_worker_contributes_no_observation_and_no_work_result(app: App) -> None:
    types = run_loop(app, participants=())
    assert not EVIDENCE & set(types), types
    assert "work_request" in types


def test_the_scripted_participants_run_only_when_named(app: App) -> None:
    types = run_loop(app, participants=("scripted",))
    assert {"work_claim", "work_result", "observation"} & set(types) == {"work_claim", "work_result"}
    projection = app.workspaces.show("ws-pilot")
    assert "obs-authentication-failures" in [o["id"] for o in projection["observations"]]


def test_scripted_is_registered_as_a_caseboard_participants_entry_point() -> None:
    assert available()["scripted"].value == "caseboard.workers.scripted:scripted_participants"


def test_an_unknown_participant_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    assert main(["--database-url", url, "worker", "--all-tenants", "--participant", "nope"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "unknown participant 'nope'" in line
    assert "scripted" in line
