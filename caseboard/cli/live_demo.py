"""``caseboard demo --live``: the whole loop in one process on the embedded ledger.

An operator opens a workspace; the dispatcher follows the outbox and hands notifications to an in-process
dramatiq broker; the controller schedules the scripted planner, specialists and verifier in cycles until
the investigation ends (a confirmed claim for the operator, or the budget spent with a handoff).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from typing import Any

from caseboard.agent.model import model_from_settings
from caseboard.agent.plugin import cast as model_cast
from caseboard.app import App
from caseboard.coordinator import parse_contribution
from caseboard.dispatcher.follower import DispatchConfig
from caseboard.dispatcher.outbox import START, open_outbox
from caseboard.dispatcher.store import DispatchStore
from caseboard.domain.errors import CaseboardError
from caseboard.domain.outcome import Refused
from caseboard.workers.live import broker_for, build_dispatcher, build_host, start_worker

LIVE_WORKSPACE = "incident-043"


def open_item(cycles: int) -> dict[str, Any]:
    return {
        "type": "open",
        "scope": {"tenant_id": "tenant-a", "environment": "production", "service": "payments-api"},
        "goal": "Identify the authentication failure mechanism",
        "execution_mode": "read_only",
        "runtime_limits": {
            "max_selected_items": 20,
            "max_investigation_cycles": cycles,
            "max_open_questions": 10,
            "max_proposals": 10,
            "max_pending_work": 10,
        },
    }


def cmd_live(app: App, args: argparse.Namespace) -> int:
    workspace_id = args.workspace or LIVE_WORKSPACE
    held = open_outbox(app.ledger).read(START, 1)
    if held:  # its dispatcher, controller and cast would act on every workspace already there
        raise CaseboardError(
            f"demo --live runs a controller and its cast on every workspace of its ledger, and this one "
            f"holds {held[0].commit.key}: give it a ledger of its own, as `make live` does "
            "(--database-url sqlite:///.caseboard/live/ledger.db)"
        )
    store = DispatchStore(app.database_url)
    broker = broker_for(app, in_process=True)
    model_url = getattr(args, "model_url", None)
    host = build_host(app, store, turn_timeout_s=5.0, participants=() if model_url else ("scripted",))
    if model_url:  # the model-backed cast at that endpoint instead of the scripted one (docs/participants.md)
        host.participants.update(model_cast(app, model_from_settings(app.settings, url=model_url), host.kinds))
    worker = start_worker(broker, host, threads=2)
    dispatcher = build_dispatcher(app, store, broker, DispatchConfig(poll_s=0.02, redrive_after_s=30.0))
    stop = threading.Event()
    follower = threading.Thread(target=dispatcher.run, args=(stop,), name="caseboard-dispatcher", daemon=True)
    follower.start()
    out = sys.stdout
    try:
        line = json.dumps(
            {
                "workspace_id": workspace_id,
                "author": {"principal": "oncall-operator", "role": "operator"},
                "items": [open_item(args.cycles)],
            }
        )
        outcome = app.coordinator().submit(parse_contribution(line))
        if isinstance(outcome, Refused):
            raise CaseboardError(f"the workspace could not be opened: {outcome.message}")
        out.write(
            f"Opened {workspace_id} with a budget of {args.cycles} cycles; the controller takes it from here.\n\n"
        )
        deadline = time.monotonic() + args.timeout
        while app.workspaces.show(workspace_id)["status"] == "investigating" and time.monotonic() < deadline:
            if stop.wait(0.05):
                break
            host.tick()
        drained = time.monotonic() + 5.0  # let the last notices reach their consumers
        while time.monotonic() < drained and (
            dispatcher.outbox.pending(dispatcher.position) or store.status("dispatcher")["unprocessed"]
        ):
            stop.wait(0.05)
    finally:
        stop.set()
        follower.join(timeout=5)
        worker.stop()
        broker.close()
    for commit in app.ledger.read(workspace_id):
        out.write(
            f"  v{commit.version:<3}{commit.author.principal} ({commit.author.role.value}): "
            f"{', '.join(s for s in commit.summary()['items'])}\n"
        )
    final = app.workspaces.show(workspace_id)
    status = store.status("dispatcher")
    store.close()
    used = f"{final['cycles_used']} cycle{'' if final['cycles_used'] == 1 else 's'}"
    out.write(f"\nStatus: {final['status']} after {used} ({final['status_detail']['reason']}).\n")
    if final["status_detail"]["handoff"]:
        out.write(f"Handoff: {final['status_detail']['handoff']}\n")
    out.write(f"Outbox: {json.dumps(status)}\n")
    return 0 if final["status"] != "investigating" else 1
