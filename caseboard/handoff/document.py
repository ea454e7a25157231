"""The handoff document, ``caseboard.handoff.v1``: what a person is told when a workspace needs one.

Made from the projection at the version that called for it (keys every reducer renders, DESIGN.md §4, plus
``questions``, ``work`` and ``status_detail`` where the reducer has them), so it is the same whenever it is
made, live or by replay. It informs: it carries no action and no command to run on any system.
JSON Schema: ``schemas/handoff.v1.schema.json`` (``make schemas``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from caseboard.domain.workspace_key import bare, tenant_part

SCHEMA = "caseboard.handoff.v1"
TRIGGERS = (
    "human_review_required", "budget_exhausted", "evidence_incomplete", "supported_conclusion",
    "late_counterevidence",
)  # fmt: skip
"""What hands a workspace to a person: the arrival of one of four statuses, or ``late_counterevidence``, a late
arrival bearing on a closed workspace's conclusion (ADR 0165)."""
SETTLED = ("completed",)
NOTE = "This document informs a person. caseboard took no action on any system and asks for none."


class _Doc(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OpenQuestion(_Doc):
    id: str
    text: str
    about: str | None = None


class Check(_Doc):
    """A check that did not complete: failed, incomplete (its query did not cover what it asked), or still
    waiting for a result, with the coverage its result recorded (None when it has none)."""

    request_id: str
    kind: str
    target: str | None = None
    status: str
    summary: str | None = None
    coverage: dict[str, Any] | None = None


class LateEvidence(_Doc):
    """An observation that arrived after the workspace closed and bears on its conclusion (ADR 0165)."""

    observation: str
    recorded_at_version: int
    bears_on: tuple[str, ...]
    """The confirmed hypotheses and accepted proposals it bears on."""
    why: tuple[str, ...]
    """Why it bears on each, in the same order."""


class Held(_Doc):
    """A question, check or proposal held for lack of capacity (docs/adr/0168-held-for-lack-of-capacity.md): in
    the ledger as submitted, recorded as nothing else until a person makes room for it."""

    type: str
    id: str
    limit: str
    author: str
    recorded_at_version: int
    item: dict[str, Any]


class ProposalStatus(_Doc):
    id: str
    status: str


class Links(_Doc):
    ui: str | None
    """The workspace's page in the console, at this version (when the tenant configured ``public_url``)."""
    report: str
    """The command that writes the auditor's report of this workspace."""


class Handoff(_Doc):
    """``caseboard.handoff.v1``: a workspace handed to a person. ``id`` is stable: the same handoff delivered
    twice carries the same id, so a receiver can drop the second."""

    schema_: Literal["caseboard.handoff.v1"] = Field(alias="schema")
    id: str
    tenant_id: str | None
    workspace_id: str
    workspace_version: int
    at: datetime
    trigger: Literal[
        "human_review_required", "budget_exhausted", "evidence_incomplete", "supported_conclusion",
        "late_counterevidence",
    ]  # fmt: skip
    """What handed it over: a status the workspace reached, or ``late_counterevidence`` (ADR 0165)."""
    status: str
    reason: str | None
    handoff: str | None
    goal: str
    scope: dict[str, str]
    open_questions: tuple[OpenQuestion, ...]
    incomplete_checks: tuple[Check, ...]
    proposals: tuple[ProposalStatus, ...]
    late_counterevidence: tuple[LateEvidence, ...] = ()
    """Observations that arrived after the workspace closed and bear on its conclusion (reducer v4): what a
    ``late_counterevidence`` handoff is about; empty when the projection lists none."""
    links: Links
    held: tuple[Held, ...] = ()
    """The items held for lack of capacity (reducer workspace-rules-v4's ``held``; empty where a reducer has none)."""
    note: str = NOTE

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    def body(self) -> bytes:
        """The bytes delivered and signed: compact JSON, ``schema`` named as such."""
        return self.model_dump_json(by_alias=True).encode()


def handoff_id(key: str, version: int) -> str:
    """The stable id of the handoff of workspace ``key`` at ``version``."""
    return f"{key}@{version}/handoff"


def build(key: str, projection: dict[str, Any], at: datetime, trigger: str, public_url: str | None) -> Handoff:
    """The handoff of the workspace ``key`` from its ``projection`` at the version that called for it."""
    version = int(projection["workspace_version"])
    detail = projection.get("status_detail") or {}
    questions = [q for q in projection.get("questions", ()) if q.get("status") == "open"]
    checks = [w for w in projection.get("work", ()) if w.get("status") not in SETTLED]
    workspace_id = bare(key)
    ui = None
    if public_url:
        ui = f"{public_url.rstrip('/')}/ui/workspaces/{workspace_id}?version={version}"
    return Handoff.model_validate(
        {
            "schema": SCHEMA,
            "id": handoff_id(key, version),
            "tenant_id": tenant_part(key) or projection.get("scope", {}).get("tenant_id"),
            "workspace_id": workspace_id,
            "workspace_version": version,
            "at": at,
            "trigger": trigger,
            "status": projection["status"],
            "reason": detail.get("reason"),
            "handoff": detail.get("handoff"),
            "goal": projection["goal"],
            "scope": projection["scope"],
            "open_questions": [{"id": q["id"], "text": q["text"], "about": q.get("about")} for q in questions],
            "incomplete_checks": [
                {
                    "request_id": w["request_id"],
                    "kind": w["kind"],
                    "target": w.get("target"),
                    "status": w["status"],
                    "summary": w.get("result_summary"),
                    "coverage": w.get("coverage"),
                }
                for w in checks
            ],
            "proposals": [{"id": p["id"], "status": p["status"]} for p in projection.get("proposals", ())],
            "late_counterevidence": [
                {
                    "observation": late["observation"],
                    "recorded_at_version": late["recorded_at_version"],
                    "bears_on": [bearing["ref"] for bearing in late["bears_on"]],
                    "why": [bearing["why"] for bearing in late["bears_on"]],
                }
                for late in projection.get("late_counterevidence") or ()
            ],
            "links": {"ui": ui, "report": f"caseboard report {key} --out report.html"},
            "held": [{name: h[name] for name in Held.model_fields} for h in projection.get("held", ())],
        }
    )


def slack_text(handoff: Handoff) -> dict[str, str]:
    """The same handoff as a Slack-compatible incoming-webhook message (text only)."""
    lines = [
        f"*{handoff.workspace_id}* (tenant {handoff.tenant_id}) needs a person: {handoff.trigger.replace('_', ' ')}"
        f" at version {handoff.workspace_version}.",
        f"Goal: {handoff.goal}",
    ]
    if handoff.handoff:
        lines.append(f"Handoff: {handoff.handoff}")
    lines += [f"- open question: {q.text}" for q in handoff.open_questions]
    lines += [f"- check {c.request_id} ({c.kind}): {c.status}" for c in handoff.incomplete_checks]
    lines += [
        f"- late counterevidence {late.observation}: bears on {', '.join(late.bears_on)}"
        for late in handoff.late_counterevidence
    ]
    if handoff.links.ui:
        lines.append(handoff.links.ui)
    lines.append(NOTE)
    return {"text": "\n".join(lines)}
