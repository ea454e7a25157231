"""The projection rendered by workspace-rules-v4: v3's document, with v4's rules of evidence.

- Rule 1: every verification or answer that settled nothing for want of coverage is listed under
  ``coverage_insufficient`` (the claim, the checks, what each is missing, the period the claim is about), and
  beside its hypothesis or question.
"""

from __future__ import annotations

from typing import Any

from caseboard.reducers.workspace_rules_v1.render import iso
from caseboard.reducers.workspace_rules_v3.render import render as render_v3
from caseboard.reducers.workspace_rules_v4.state import UnsettledRec, WorkspaceStateV4


def unsettled(rec: UnsettledRec) -> dict[str, Any]:
    return {
        "kind": rec.kind,
        "claim": rec.claim,
        "checks": list(rec.checks),
        "result": rec.result,
        "author": rec.author,
        "recorded_at_version": rec.version,
        "missing": list(rec.missing),
        "period": None if rec.window_start is None else [iso(rec.window_start), iso(rec.window_end)],
    }


def render(state: WorkspaceStateV4, reducer_version: str) -> dict[str, Any]:
    document = render_v3(state, reducer_version)
    by_claim: dict[str, list[dict[str, Any]]] = {}
    for rec in state.unsettled.values():
        by_claim.setdefault(rec.claim, []).append(unsettled(rec))
    for entry in (*document["hypotheses"], *document["questions"]):
        entry["coverage_insufficient"] = by_claim.get(entry["id"], [])
    document["coverage_insufficient"] = [unsettled(rec) for rec in state.unsettled.values()]
    return document
