"""One evaluation: every incident of a corpus through every arm asked for, recorded, scored and reported.

The workspace arm runs on a fresh embedded ledger (SQLite, with its file artifact store beside it) in a
temporary directory, one workspace per incident; each run's ledger is exported to ``OUT/runs/ID.workspace.jsonl``
(a recorded incident: ``caseboard verify`` and ``caseboard replay`` read it). The single-agent arm's record is
its step trace, ``OUT/runs/ID.single-agent.jsonl``. ``OUT/evaluation.json`` holds the figures,
``OUT/report.html`` and ``OUT/report.png`` the report.

Participants: ``scripted`` (the default) runs ``caseboard.evaluation.cast``. Any other name is a
``caseboard.participants`` entry point (ADR 0051): the workspace arm then runs that plugin's ``planner`` and
``verifier`` (a model-backed cast, ``caseboard agent``'s, plugs in here) against the same recorded sources.
"""

from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from caseboard.coordinator.service import Coordinator
from caseboard.domain.errors import ConfigurationError
from caseboard.evaluation.cast import Planner, Verifier
from caseboard.evaluation.ending import Ending
from caseboard.evaluation.figures import Pricing, score, totals
from caseboard.evaluation.incident import TRAP_KINDS, EvaluationIncident
from caseboard.evaluation.report import LIMITS, write_report
from caseboard.evaluation.single_agent import SingleAgent
from caseboard.evaluation.tools import Tools
from caseboard.evaluation.workspace_arm import WorkspaceRun
from caseboard.evidence import ArtifactStore
from caseboard.ledger import EventsourcingLedger
from caseboard.projections import Workspaces
from caseboard.replay.transfer import export
from caseboard.workers.plugins import load_participants
from caseboard.workers.runtime import Participant

ARMS = ("workspace", "single-agent")
SCRIPTED = "scripted"
RESULT_FORMAT = "caseboard.evaluation-result/1"


class Wired(Protocol):
    """What the workspace arm runs on: the parts the composition root wires (caseboard.app.App)."""

    ledger: EventsourcingLedger
    workspaces: Workspaces

    @property
    def artifacts(self) -> ArtifactStore: ...

    def coordinator(self, *, trust_timestamps: bool = False) -> Coordinator: ...

    def close(self) -> None: ...


Opener = Callable[[str], Wired]
"""Builds the parts on the ledger at a database URL (the command line passes ``build_app``)."""


@dataclass(frozen=True)
class Options:
    arms: tuple[str, ...] = ARMS
    cycles: int | None = None
    """The cycle budget (steps for the single agent); default: each incident's own limit."""
    tokens: int | None = None
    participants: str = SCRIPTED
    pricing: Pricing = field(default_factory=Pricing)


def check_options(options: Options) -> None:
    """One clear refusal for what cannot run, before anything is opened."""
    unknown = [arm for arm in options.arms if arm not in ARMS]
    if unknown or not options.arms:
        raise ConfigurationError(f"unknown arm {', '.join(unknown) or '(none)'}: arms are {', '.join(ARMS)}")
    if options.participants != SCRIPTED and "single-agent" in options.arms:
        raise ConfigurationError(
            f"participants {options.participants!r}: the single-agent arm runs scripted participants only; "
            "run '--arm workspace' alone with a participant plugin (docs/evaluation.md)"
        )
    if options.participants != SCRIPTED:
        load_participants([options.participants], ())  # unknown names: one line naming the installed ones


def cast_for(options: Options, incident: EvaluationIncident, tools: Tools) -> dict[str, Participant]:
    if options.participants == SCRIPTED:
        return {"planner": Planner(incident), "verifier": Verifier(tools)}
    loaded = load_participants([options.participants], tuple(sorted(incident.tools)))
    return {audience: loaded[audience] for audience in ("planner", "verifier") if audience in loaded}


def run_workspace(app: Wired, incident: EvaluationIncident, options: Options, out: Path) -> Ending:
    tenant = incident.scope["tenant_id"]

    def store(data: bytes) -> str:
        return app.artifacts.put(tenant, [data], stored_by="evaluation", media_type="text/plain").meta.artifact_id

    tools = Tools(incident, store)
    run = WorkspaceRun(
        app.coordinator(trust_timestamps=True),
        app.workspaces,
        app.ledger,
        incident,
        cast_for(options, incident, tools),
        tools,
        token_budget=options.tokens,
        cycle_budget=options.cycles,
    )
    run.run()
    record = f"runs/{incident.id}.workspace.jsonl"
    buffer = io.StringIO()
    export(app.ledger, incident.id, buffer)
    (out / record).write_text(buffer.getvalue())
    return run.ending(record)


def run_single_agent(incident: EvaluationIncident, options: Options, out: Path) -> Ending:
    budget = options.cycles or incident.runtime_limits["max_investigation_cycles"]
    agent = SingleAgent(incident, Tools(incident), budget, options.tokens)
    agent.run()
    record = f"runs/{incident.id}.single-agent.jsonl"
    (out / record).write_text("".join(json.dumps(step, sort_keys=True) + "\n" for step in agent.trace))
    return agent.ending(record)


def evaluate(incidents: list[EvaluationIncident], options: Options, out: Path, open_app: Opener) -> dict[str, Any]:
    check_options(options)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="caseboard-evaluation-") as scratch:
        app = open_app(f"sqlite:///{scratch}/ledger.db")
        try:
            for incident in incidents:
                for arm in options.arms:
                    if arm == "workspace":
                        ending = run_workspace(app, incident, options, out)
                    else:
                        ending = run_single_agent(incident, options, out)
                    rows.append(score(incident, ending, options.pricing))
        finally:
            app.close()
    result = {
        "format": RESULT_FORMAT,
        "corpus": {
            "incidents": len(incidents),
            "scenarios": {s: sum(i.scenario == s for i in incidents) for s in sorted({i.scenario for i in incidents})},
            "expected_outcomes": {
                o: sum(i.truth.outcome == o for i in incidents) for o in sorted({i.truth.outcome for i in incidents})
            },
            "traps": {k: sum(t.kind == k for i in incidents for t in i.truth.traps) for k in TRAP_KINDS},
        },
        "arms": list(options.arms),
        "participants": options.participants,
        "budget": {"cycles": options.cycles, "tokens": options.tokens},
        "pricing": {"price_per_mtok": options.pricing.price_per_mtok, "tokens": "input, 4 characters a token"},
        "totals": {arm: totals([r for r in rows if r["arm"] == arm]) for arm in options.arms},
        "runs": rows,
        "limits": list(LIMITS),
    }
    (out / "evaluation.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    write_report(result, out)
    return result
