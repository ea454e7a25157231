"""The judgments of a workspace, for an auditor: one entry per recorded model call, read from the ledger.

Each entry says which commit carried it and who made the call, which model was shown which version (and the
evidence revisions it quoted), the prompt's SHA-256 (the exact messages are the artifact ``sha256:<hex>`` in
the workspace's tenant), the tokens and latency, and what came of the reply: the item types it contributed in
the same commit, or why it contributed nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from caseboard.domain.commit import Commit
from caseboard.evidence.model import ArtifactError, ArtifactStore


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


MAX_SHOWN_BYTES = 512 * 1024
"""The most bytes of a prompt or reply ``stored_bytes`` hands back to be shown (all of them are hashed)."""


def stored_bytes(artifacts: ArtifactStore, tenant_id: str, sha256: str) -> dict[str, Any]:
    """The artifact ``sha256:<sha256>`` of the tenant, checked against the hash a judgment recorded: ``check`` is
    ``verified`` when the stored bytes hash to it, ``mismatch`` when they do not (the artifact was altered), and
    ``missing`` when the store has no such artifact (never stored, or removed under retention); ``text`` the
    bytes as UTF-8 (at most ``MAX_SHOWN_BYTES``; undecodable bytes replaced), None when missing."""
    digest = hashlib.sha256()
    shown = bytearray()
    try:
        for block in artifacts.read(tenant_id, f"sha256:{sha256}"):
            digest.update(block)
            if len(shown) < MAX_SHOWN_BYTES:
                shown += block[: MAX_SHOWN_BYTES - len(shown)]
    except ArtifactError as error:
        return {"check": "missing", "sha256": sha256, "found_sha256": None, "text": None, "detail": str(error)}
    found = digest.hexdigest()
    return {
        "check": "verified" if found == sha256 else "mismatch",
        "sha256": sha256,
        "found_sha256": found,
        "text": shown.decode("utf-8", errors="replace"),
        "detail": None if found == sha256 else f"the stored bytes hash to {found}",
    }


def table(entries: list[dict[str, Any]]) -> str:
    """The entries as aligned text lines, one per call."""
    lines = ["version  shown  principal                    model                 tokens  latency_ms  outcome"]
    for e in entries:
        tokens = (e["usage"] or {}).get("total_tokens", "-")
        outcome = f"refused: {e['refusal']['reason']}" if e["refusal"] else ", ".join(e["contributed"]) or "-"
        lines.append(
            f"v{e['workspace_version']:<7} v{e['input_workspace_version']:<5} {e['author']['principal']:<28} "
            f"{e['model'][:21]:<21} {tokens!s:>6}  {e['latency_ms']!s:>10}  {outcome}"
        )
    return "\n".join(lines)
