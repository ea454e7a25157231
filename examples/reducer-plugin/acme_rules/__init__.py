"""Reducer ``acme-rules-v4``: caseboard's ``workspace-rules-v4`` with one rule of Acme's own, the rule of two.

One source is a lead, two are support: a hypothesis that workspace-rules-v4 shows as ``supported`` is
``proposed`` until its support rests on two sources (a derived summary counts as its sources, copies of one
excerpt as one source, as in v4). Every other status is v4's, and so is everything else.

The reducer is v4's with its ``hypothesis_status`` replaced: the projection (``show``, ``replay``), ``compare``,
``explain``, routing, the model view and the coordinator's decisions then all judge hypotheses by this rule,
and every one of them names ``acme-rules-v4`` (docs/reducers.md).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from caseboard.reducers import HypothesisRec, Reducer, WorkspaceState, get_reducer, sources

NAME = "acme-rules-v4"
WORKSPACE_RULES_V4 = get_reducer("workspace-rules-v4")


def hypothesis_status(state: WorkspaceState, hypothesis: HypothesisRec) -> str:
    """v4's status, except that support resting on fewer than two sources is not support yet."""
    status = WORKSPACE_RULES_V4.hypothesis_status(state, hypothesis)
    if status != "supported":
        return status
    rests_on = {WORKSPACE_RULES_V4.copy_group(state, ref)[0] for ref in sources(state, hypothesis.supporting)}
    return "supported" if len(rests_on) >= 2 else "proposed"


REDUCER: Reducer[Any] = dataclasses.replace(WORKSPACE_RULES_V4, name=NAME, hypothesis_status=hypothesis_status)
