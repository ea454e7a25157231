"""The judgments of a workspace, for an auditor: one entry per recorded model call, read from the ledger.

Each entry says which commit carried it and who made the call, which model was shown which version (and the
evidence revisions it quoted), the prompt's SHA-256 (the exact messages are the artifact ``sha256:<hex>`` in
the workspace's tenant), the tokens and latency, and what came of the reply: the item types it contributed in
the same commit, or why it contributed nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from caseboard.domain.commit import Commit
from caseboard.evidence.cited import MAX_SHOWN_BYTES, stored_bytes  # in the evidence layer, for the report too

__all__ = ["MAX_SHOWN_BYTES", "judgments", "stored_bytes", "table"]


def judgments(commits: Iterable[Commit]) -> list[dict[str, Any]]:
    out = []
    for commit in commits:
        produced = [item.type for item in commit.items if item.type != "judgment"]
        for item in commit.items:
            if item.type != "judgment":
                continue
            output = item.output
            refusal = output.get("refusal")
            out.append(
                {
                    "workspace_version": commit.version,
                    "at": commit.at.isoformat().replace("+00:00", "Z"),
                    "author": {"principal": commit.author.principal, "role": commit.author.role.value},
                    "invocation_id": item.invocation_id,
                    "component": item.component,
                    "model": item.model,
                    "prompt_sha256": item.prompt_sha256,
                    "prompt_artifact": f"sha256:{item.prompt_sha256}",
                    "reply_artifact": output.get("reply_artifact"),
                    "input_workspace_version": item.input_workspace_version,
                    "evidence_revisions": dict(item.evidence_revisions),
                    "usage": output.get("usage"),
                    "latency_ms": output.get("latency_ms"),
                    "attempts": output.get("attempts"),
                    "contributed": [] if refusal else produced,
                    "refusal": refusal,
                }
            )
    return out


def table(entries: list[dict[str, Any]]) -> str:
    """The entries as aligned text lines, one per call."""
    lines = ["version  shown  principal                    model                 tokens  latency_ms  outcome"]
    for e in entries:
        tokens = _shown((e["usage"] or {}).get("total_tokens"))
        outcome = f"refused: {e['refusal']['reason']}" if e["refusal"] else ", ".join(e["contributed"]) or "-"
        lines.append(
            f"v{e['workspace_version']:<7} v{e['input_workspace_version']:<5} {e['author']['principal']:<28} "
            f"{e['model'][:21]:<21} {tokens:>6}  {_shown(e['latency_ms']):>10}  {outcome}"
        )
    return "\n".join(lines)


def _shown(value: Any) -> str:
    """A figure of the table, or ``-`` where the call recorded none (a recorded judgment, a call never answered)."""
    return "-" if value is None else str(value)
