"""The ledger says what it can do (``EventsourcingLedger.capabilities``), and its SQL stays with it.

On every store (in memory, SQLite, PostgreSQL) the layers above choose their path by the capabilities alone:
the outbox, the wake-up after each append, the append on an event loop, the undecoded rows of an audit.
Nothing outside ``caseboard/ledger/`` probes the recorder behind a ledger.
"""

from __future__ import annotations

import ast
import asyncio
import time
from pathlib import Path

import pytest

from caseboard.coordinator import Coordinator
from caseboard.ledger import EventsourcingLedger
from caseboard.ledger.outbox import START
from tests.integration.test_concurrency_postgres import observation, opening

PACKAGE = Path(__file__).resolve().parents[2] / "caseboard"


def test_the_capabilities_are_those_of_the_store(ledger: EventsourcingLedger, ledger_url: str) -> None:
    postgres = ledger_url.startswith("postgresql")
    assert ledger.capabilities.appends_on_loop is postgres is ledger.appends_on_loop
    assert ledger.capabilities.live is postgres is ledger.outbox().live


def test_the_outbox_and_the_raw_rows_hold_every_commit_in_order(ledger: EventsourcingLedger) -> None:
    coordinator = Coordinator(ledger)
    for workspace_id in ("ws-a", "ws-b"):
        assert coordinator.submit(opening(workspace_id))["ok"]
    assert coordinator.submit(observation("ws-a", "obs-1", "alice"))["ok"]
    outbox = ledger.outbox()
    deadline = time.monotonic() + 5
    while len(entries := outbox.read(START, 10)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)  # PostgreSQL's outbox reads a row once no older transaction is running
    assert [(e.commit.workspace_id, e.commit.version) for e in entries] == [("ws-a", 1), ("ws-b", 1), ("ws-a", 2)]
    assert outbox.pending(START) == 3 and outbox.pending(entries[-1].position) == 0
    assert outbox.head() >= 3
    batches = list(ledger.raw_rows("ws-a", batch=1))
    assert [[(version, topic) for version, topic, _ in rows] for rows in batches] == [
        [(1, "caseboard.commit")],
        [(2, "caseboard.commit")],
    ]
    assert [rows[0][2] for rows in batches] == [commit.stored_json for commit in ledger.read("ws-a")]
    assert list(ledger.raw_rows("ws-a", after=1, upto=1)) == []


def test_only_a_live_ledger_wakes_after_each_append(ledger: EventsourcingLedger) -> None:
    woken: list[int] = []
    if not ledger.capabilities.live:
        with pytest.raises(RuntimeError):
            ledger.after_append(lambda: woken.append(1))
        return
    ledger.after_append(lambda: woken.append(ledger.head("ws-w")))
    assert Coordinator(ledger).submit(opening("ws-w"))["ok"]
    assert woken == [1]  # after the commit landed


def test_only_a_ledger_that_appends_on_a_loop_is_asked_to(ledger: EventsourcingLedger) -> None:
    first = Coordinator(ledger)
    assert first.submit(opening("ws-l"))["ok"]
    commit = ledger.read("ws-l")[0].model_copy(update={"version": 2, "previous_hash": None})
    if not ledger.capabilities.appends_on_loop:
        with pytest.raises(RuntimeError):
            asyncio.run(ledger.append_on_loop(commit))
        return
    asyncio.run(ledger.append_on_loop(commit))
    assert ledger.head("ws-l") == 2


def _probes(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "getattr"):
            text = ast.unparse(node)
            if "Recorder" in text or ".events" in text or "ledger" in text:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {text}")
        if isinstance(node, ast.Attribute) and node.attr == "events" and "ledger" in ast.unparse(node.value):
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {ast.unparse(node)}")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("caseboard.ledger.postgres"):
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} imports {node.module}")
    return found


def test_nothing_outside_the_ledger_probes_the_recorder_behind_it() -> None:
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if not p.is_relative_to(PACKAGE / "ledger")]
    assert [probe for path in outside for probe in _probes(path)] == []


def test_a_read_bounded_past_any_version_reads_as_far_as_there_is(ledger: EventsourcingLedger) -> None:
    # A version from a person (caseboard log --after, replay --to, diff) can be any integer; SQLite takes none
    # past 64 bits, so the ledger reads such a bound as its own last version.
    coordinator = Coordinator(ledger)
    assert coordinator.submit(opening("ws-far"))["ok"]
    assert coordinator.submit(observation("ws-far", "obs-1", "alice"))["ok"]
    assert ledger.read("ws-far", after=2**70) == []
    assert [commit.version for commit in ledger.read("ws-far", upto=2**70)] == [1, 2]
    assert ledger.latest_snapshot("ws-far", "workspace-rules-v4", 2**70) is None
