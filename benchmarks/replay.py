"""Replay speed: commits folded per second for one workspace of 100,000 commits on PostgreSQL.

The workspace is built fast but valid: a short head played through the coordinator (opening it and
filling the selection), then observations whose commits carry exactly the decisions the coordinator would
record (the selection is full), with correct versions and hash chain, inserted in batches through the
recorder. ``replay_vs_raw`` is replay's rate (``caseboard.replay`` reading the ledger, bulk decode, fold)
over the rate of a raw ``SELECT state`` + ``json.loads`` + validate + fold of the same rows, measured in the
same run; the goal is at least 0.5. ``compare_corpus_s`` is ``compare`` v1 vs v2 over corpus/.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import psycopg
from psycopg.sql import SQL, Identifier

from benchmarks.context import BenchContext, median
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.commit import Commit
from caseboard.domain.contribution import Author
from caseboard.domain.items import Observation, Role
from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.ledger.base import encode_commit
from caseboard.logs import configure_logging
from caseboard.reducers import get_reducer
from caseboard.replay.compare import compare
from caseboard.replay.rebuild import fold
from caseboard.replay.records import read_ledger

WORKSPACE = "bench-replay"
CORPUS = Path(__file__).resolve().parent.parent / "corpus"
START = datetime(2026, 3, 2, 14, 0, tzinfo=UTC)
HEAD = 25
BATCH = 2000


def _contribution(items: list[dict[str, object]], principal: str, role: str, at: datetime) -> str:
    return json.dumps(
        {
            "workspace_id": WORKSPACE,
            "author": {"principal": principal, "role": role},
            "at": at.isoformat(),
            "items": items,
        }
    )


def _observation(number: int, at: datetime) -> dict[str, object]:
    return {
        "type": "observation",
        "id": f"obs-{number}",
        "statement": f"Log line {number}: connection reset",
        "source": {"system": "auth-logs", "instance": f"payments-api-{number % 7}"},
        "event_time": at.isoformat(),
        "event_time_quality": "verified",
    }


def build(ledger: EventsourcingLedger, commits: int) -> None:
    head = open_ledger("memory://")
    coordinator = Coordinator(head, trust_timestamps=True)
    limits = {
        "max_selected_items": 20,
        "max_investigation_cycles": 6,
        "max_open_questions": 10,
        "max_proposals": 10,
        "max_pending_work": 10,
    }
    scope = {"tenant_id": "t", "environment": "production", "service": "payments-api"}
    opening: list[dict[str, object]] = [
        {
            "type": "open",
            "scope": scope,
            "goal": "replay benchmark",
            "runtime_limits": limits,
            "execution_mode": "read_only",
        }
    ]
    outcomes = [coordinator.submit(parse_contribution(_contribution(opening, "operator", "operator", START)))]
    for version in range(2, HEAD + 1):
        at = START + timedelta(seconds=version)
        line = _contribution([_observation(version, at)], "log-specialist", "specialist", at)
        outcomes.append(coordinator.submit(parse_contribution(line)))
    assert all(o["ok"] for o in outcomes), outcomes
    recorded = head.read(WORKSPACE)
    last = recorded[-1].decisions[0]
    assert "deselected" in last, "the head must fill the selection, so that each new observation slides it"
    slide = HEAD - int(last["deselected"][0].removeprefix("obs-"))  # how far behind the one it displaces is
    batch = [encode_commit(c) for c in recorded]
    author = Author(principal="log-specialist", role=Role.SPECIALIST)
    previous = recorded[-1].hash
    for version in range(HEAD + 1, commits + 1):
        at = START + timedelta(seconds=version)
        item = Observation.model_validate(_observation(version, at))
        commit = Commit(
            workspace_id=WORKSPACE,
            version=version,
            at=at,
            author=author,
            items=(item,),
            decisions=(_slid(item.id, f"obs-{version - slide}", last),),
            previous_hash=previous,
        ).sealed()
        previous = commit.hash
        batch.append(encode_commit(commit))
        if len(batch) >= BATCH:
            ledger.events.insert_events(batch)
            batch = []
    if batch:
        ledger.events.insert_events(batch)


def _slid(selected: str, displaced: str, like: dict[str, Any]) -> dict[str, Any]:
    """The coordinator's decision for a new observation that displaces the oldest one, shaped as ``like``."""
    reason = like["deselection"][0]["reason"].replace(like["id"], selected)
    return {
        "id": selected,
        "selected": [selected],
        "deselected": [displaced],
        "deselection": [{"id": displaced, "reason": reason}],
    }


def raw_fold(url: str) -> int:
    """The baseline: one SELECT of the rows, json.loads, validate, fold."""
    parts = urlparse(url)
    schema = parse_qs(parts.query)["schema"][0]
    reducer = get_reducer()
    with psycopg.connect(url.split("?")[0]) as conn:
        rows = conn.execute(
            SQL("SELECT state FROM {}.caseboard_commits WHERE originator_id = %s ORDER BY originator_version").format(
                Identifier(schema)
            ),
            (WORKSPACE,),
        ).fetchall()
    state = reducer.initial(WORKSPACE)
    for (data,) in rows:
        state = reducer.evolve(state, Commit.model_validate(json.loads(data)))
    return state.version


def replay_fold(ledger: EventsourcingLedger) -> int:
    reducer = get_reducer()
    return fold(read_ledger(ledger, WORKSPACE), reducer).version


def run(ctx: BenchContext) -> dict[str, float]:
    configure_logging("warning", "json", cache=True)  # the section has a process of its own
    commits = 2_000 if ctx.quick else 100_000
    rounds = 1 if ctx.quick else min(ctx.rounds, 3)
    with ctx.fresh_schema() as url:
        ledger = open_ledger(url)
        try:
            started = time.perf_counter()
            build(ledger, commits)
            print(f"built {commits} commits in {time.perf_counter() - started:.1f}s", flush=True)
            replay_s, raw_s = [], []
            for _ in range(rounds):
                started = time.perf_counter()
                assert replay_fold(ledger) == commits
                replay_s.append(time.perf_counter() - started)
                started = time.perf_counter()
                assert raw_fold(url) == commits
                raw_s.append(time.perf_counter() - started)
        finally:
            ledger.close()
    replay_rate, raw_rate = commits / median(replay_s), commits / median(raw_s)
    print(
        f"replay {replay_rate:,.0f} commits/s, raw SELECT + json.loads + fold {raw_rate:,.0f} commits/s",
        flush=True,
    )
    started = time.perf_counter()
    result = compare([str(CORPUS)], "workspace-rules-v1", "workspace-rules-v2")
    compare_s = time.perf_counter() - started
    print(
        f"compare over {result.incidents} incidents ({result.versions} versions): {compare_s:.2f}s",
        flush=True,
    )
    return {
        "replay_commits_per_s": replay_rate,
        "raw_fold_commits_per_s": raw_rate,
        "replay_vs_raw": replay_rate / raw_rate,
        "compare_corpus_s": compare_s,
    }
