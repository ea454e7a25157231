"""Concurrent runs judged by their history (issue 20): several OS processes on PostgreSQL, released by a barrier,
each with its own ledger and coordinator, write a mix of contributions to two workspaces: read-then-write with
``expected_version``, unconditional writes, and retries of the same idempotency key (from two processes at
once). Every answer is recorded; a checker then requires that the history is consistent with one serial
order per workspace:

- every acknowledged commit is in the ledger, at the version it was told, with its key and author;
- no version was acknowledged twice, except to the retries of one key, which all got that one commit;
- the ledger holds no commit that nobody was told of (nothing crashed, so every commit was answered);
- a write with ``expected_version`` E landed at E + 1, and a ``version_conflict`` named a later version;
- versions are contiguous, and the cached projection of each process equals a fresh fold.
"""

from __future__ import annotations

import multiprocessing
import random
from collections import defaultdict
from typing import Any

import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import open_ledger
from caseboard.logs import configure_logging
from caseboard.projections import Workspaces
from tests.conftest import contribution, open_item

pytestmark = pytest.mark.postgres

PROCESSES = 4
WRITES = 30
WORKSPACES = ("ws-h-0", "ws-h-1")


def observation_item(obs_id: str) -> dict[str, Any]:
    return {
        "type": "observation",
        "id": obs_id,
        "statement": "auth failures rose",
        "source": {"system": "logs", "instance": "auth-1"},
        "event_time": "2026-03-02T14:03:00Z",
        "event_time_quality": "verified",
    }


def writer(url: str, index: int, barrier: Any, results: Any) -> None:
    """One process: its own ledger and coordinator; every answer goes to ``results``."""
    configure_logging("error", "console")
    ledger = open_ledger(url)
    coordinator = Coordinator(ledger)
    chooser = random.Random(index)  # the mix differs by process, and is the same on every run
    history: list[dict[str, Any]] = []
    try:
        barrier.wait(timeout=60)
        for number in range(WRITES):
            workspace = WORKSPACES[chooser.randrange(len(WORKSPACES))]
            mode = chooser.choice(["expected", "expected", "plain", "shared-key"])
            envelope: dict[str, Any] = {}
            principal = f"specialist-{index}"
            obs_id = f"o-{index}-{number}"
            if mode == "expected":
                envelope["expected_version"] = ledger.head(workspace)
                envelope["idempotency_key"] = f"k-{index}-{number}"
            elif mode == "shared-key":  # the same content and key from every process that draws it
                principal, obs_id = "specialist-shared", f"o-shared-{number}"
                envelope["idempotency_key"] = f"shared-{number}"
            else:
                envelope["idempotency_key"] = f"k-{index}-{number}"
            text = contribution(
                [observation_item(obs_id)], principal=principal, role="specialist", workspace_id=workspace, **envelope
            )
            outcome = coordinator.submit(parse_contribution(text)).as_json()
            history.append(
                {
                    "process": index,
                    "workspace": workspace,
                    "principal": principal,
                    "key": envelope["idempotency_key"],
                    "expected": envelope.get("expected_version"),
                    "outcome": outcome,
                }
            )
        projections = {ws: coordinator.workspaces.show(ws) for ws in WORKSPACES if ledger.head(ws)}
        results.put(("ok", index, history, projections))
    except BaseException as error:  # reported to the test, which fails with it
        results.put(("error", index, repr(error), {}))
    finally:
        ledger.close()


def test_concurrent_histories_are_consistent_with_one_serial_order_per_workspace(postgres_url: str) -> None:
    ledger = open_ledger(postgres_url)
    coordinator = Coordinator(ledger)
    for workspace in WORKSPACES:
        opened = coordinator.submit(
            parse_contribution(contribution([open_item()], principal="op", role="operator", workspace_id=workspace))
        )
        assert opened.ok
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(PROCESSES), context.Queue()
    processes = [context.Process(target=writer, args=(postgres_url, n, barrier, results)) for n in range(PROCESSES)]
    for process in processes:
        process.start()
    reports = [results.get(timeout=180) for _ in processes]
    for process in processes:
        process.join(timeout=30)
    errors = [report for report in reports if report[0] != "ok"]
    assert not errors, errors

    history = [entry for report in reports for entry in report[2]]
    try:
        check_history(ledger, history)
        fresh = Workspaces(ledger)
        for report in reports:
            for workspace, projection in report[3].items():
                at = projection["workspace_version"]
                assert projection == fresh.show(workspace, at), f"process {report[1]}: its cache of {workspace}"
    finally:
        ledger.close()


def check_history(ledger: Any, history: list[dict[str, Any]]) -> None:
    """The checker of the module's docstring."""
    told: dict[tuple[str, int], set[tuple[str, str]]] = defaultdict(set)  # (workspace, version) -> {(who, key)}
    for entry in history:
        outcome, workspace = entry["outcome"], entry["workspace"]
        if outcome["ok"]:
            version = outcome["workspace_version"]
            told[(workspace, version)].add((entry["principal"], entry["key"]))
            if entry["expected"] is not None and not outcome.get("idempotent_replay"):
                assert version == entry["expected"] + 1, f"written on {entry['expected']}, landed at {version}"
        else:
            assert outcome["reason"] == "version_conflict", entry
            assert entry["expected"] is not None and outcome["current_version"] > entry["expected"], entry
    for slot, writers in told.items():
        assert len(writers) == 1, f"{slot} was acknowledged to different writers: {writers}"
    for workspace in WORKSPACES:
        commits = list(ledger.read(workspace))
        assert [c.version for c in commits] == list(range(1, len(commits) + 1)), f"{workspace}: a gap"
        for commit in commits[1:]:
            writers = told.get((workspace, commit.version))
            assert writers, f"{workspace} v{commit.version} is in the ledger but nobody was told of it"
            assert writers == {(commit.author.principal, commit.idempotency_key)}, (commit.version, writers)
        keys = [(c.author.principal, c.idempotency_key) for c in commits[1:]]
        assert len(keys) == len(set(keys)), f"{workspace}: a key committed twice"
    acknowledged = {slot for slot in told}
    stored = {(ws, c.version) for ws in WORKSPACES for c in list(ledger.read(ws))[1:]}
    assert acknowledged == stored, f"acknowledged but missing: {sorted(acknowledged - stored)}"
    assert len(stored) >= PROCESSES * WRITES // 4, f"too few commits for a race: {len(stored)}"
    conflicts = sum(1 for entry in history if not entry["outcome"]["ok"])
    replays = sum(1 for entry in history if entry["outcome"].get("idempotent_replay"))
    assert conflicts and replays, f"no race happened: {conflicts} conflicts, {replays} idempotent replays"
