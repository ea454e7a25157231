"""A model-backed participant's own cost around a model that answers at once, on PostgreSQL.

``agent_turn_vs_bare_submit``: the median time of one participant turn (read the workspace and build the
bounded view for the planner, write the prompt, hash it and keep it in the artifact store, call the model,
parse the reply, submit its items with their judgment at the version shown) over the median time of a bare
submit of the same item (one observation, parsed and committed with ``expected_version``). The model is an
in-memory twin that answers instantly, so the ratio is the participant's overhead and nothing of a model's.
Turns and bare submits alternate on the same workspace, so both see the same ledger; each round runs over
fresh workspaces of an incident's size (about 20 commits, as incident-042 has), so the figure is not that of
a workspace grown to thousands of observations. ``agent_turn_ms`` and ``agent_bare_submit_ms`` are the two
medians; the ratio is the median over rounds of each round's ratio.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass
from typing import Any

from benchmarks.context import BenchContext, median
from benchmarks.workload import log_to_devnull
from caseboard.agent.board import Board
from caseboard.agent.budget import Budget
from caseboard.agent.model import Messages, ModelReply
from caseboard.agent.participant import ModelParticipant
from caseboard.agent.turn import take_turn
from caseboard.app import build_app
from caseboard.coordinator import parse_contribution
from caseboard.dispatcher.notification import Notification
from caseboard.domain.items import Role
from caseboard.settings import Settings

WS = "bench-agent"


@dataclass(frozen=True)
class Sizes:
    workspaces: int
    turns: int
    """Per workspace: this many turns, each followed by a bare submit (an incident's size: about 20 commits)."""


FULL = Sizes(workspaces=20, turns=10)
QUICK = Sizes(workspaces=2, turns=3)


def observation(n: int) -> dict[str, Any]:
    return {
        "type": "observation",
        "id": f"obs-{n}",
        "statement": f"Authentication failures on payments-api-{n % 3}",
        "source": {"system": "auth-logs", "instance": f"payments-api-{n % 3}"},
        "event_time": "2026-03-02T14:03:00Z",
        "event_time_quality": "verified",
    }


@dataclass
class InstantModel:
    """The model seam's in-memory twin: one observation per call, answered at once."""

    ids: itertools.count[int]
    name: str = "instant"

    def complete(self, messages: Messages, *, max_tokens: int) -> ModelReply:
        content = json.dumps({"items": [observation(next(self.ids))], "rationale": "instant"})
        return ModelReply(content, self.name, {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}, 0, 1)


def run(ctx: BenchContext) -> dict[str, float]:
    sizes = QUICK if ctx.quick else FULL
    log_to_devnull()
    with ctx.fresh_schema() as url:
        app = build_app(Settings(), database_url=url)
        try:
            return measure(app, sizes, ctx.rounds)
        finally:
            app.close()


def open_body(workspace_id: str) -> dict[str, Any]:
    return {
        "workspace_id": workspace_id,
        "author": {"principal": "oncall-operator", "role": "operator"},
        "items": [
            {
                "type": "open",
                "goal": "Identify the authentication failure mechanism",
                "scope": {"tenant_id": "tenant-a", "environment": "production", "service": "payments-api"},
                "execution_mode": "read_only",
                "runtime_limits": {
                    "max_selected_items": 20,
                    "max_investigation_cycles": 6,
                    "max_open_questions": 10,
                    "max_proposals": 10,
                    "max_pending_work": 10,
                },
            }
        ],
    }


def measure(app: Any, sizes: Sizes, rounds: int) -> dict[str, float]:
    board = Board(app)
    ids = itertools.count(1)
    planner = ModelParticipant(
        "planner-1", Role.PLANNER, InstantModel(ids), board, Budget(10**9, 10**12), invocation_ids=_ids()
    )
    ratios, turns, bares = [], [], []
    for number in range(1, rounds + 1):
        turn_times, bare_times = [], []
        for workspace in range(sizes.workspaces):
            ws = f"{WS}-{number}-{workspace}"
            assert board.submit(open_body(ws))["ok"]
            for _ in range(sizes.turns):
                version = app.ledger.head(ws)
                note = Notification(
                    id=f"{ws}@{version}/turn/planner-1",
                    kind="turn",
                    audience="planner",
                    workspace_id=ws,
                    workspace_version=version,
                    subject="planner-1",
                    principal="planner-1",
                )
                started = time.perf_counter()
                outcomes = take_turn(board, planner, note)
                turn_times.append(time.perf_counter() - started)
                assert outcomes and outcomes[-1]["ok"], outcomes
                body = {
                    "workspace_id": ws,
                    "author": {"principal": "log-specialist", "role": "specialist"},
                    "expected_version": app.ledger.head(ws),
                    "items": [observation(next(ids))],
                }
                started = time.perf_counter()
                outcome = app.coordinator().submit(parse_contribution(body))
                bare_times.append(time.perf_counter() - started)
                assert outcome["ok"], outcome
        turn_ms, bare_ms = median(turn_times) * 1000, median(bare_times) * 1000
        print(
            f"round {number}: participant turn {turn_ms:6.2f} ms  bare submit {bare_ms:6.2f} ms  "
            f"({turn_ms / bare_ms:.2f}x; {sizes.workspaces} workspaces of {2 * sizes.turns + 1} commits)"
        )
        ratios.append(turn_ms / bare_ms)
        turns.append(turn_ms)
        bares.append(bare_ms)
    return {
        "agent_turn_vs_bare_submit": median(ratios),
        "agent_turn_ms": median(turns),
        "agent_bare_submit_ms": median(bares),
    }


def _ids() -> Any:
    counter = itertools.count(1)
    return lambda: f"inv-bench-{next(counter)}"
