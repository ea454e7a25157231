"""The projection rendered by workspace-rules-v4: v3's document, with v4's rules of evidence."""

from __future__ import annotations

from typing import Any

from caseboard.reducers.workspace_rules_v3.render import render as render_v3
from caseboard.reducers.workspace_rules_v4.state import WorkspaceStateV4


def render(state: WorkspaceStateV4, reducer_version: str) -> dict[str, Any]:
    return render_v3(state, reducer_version)
