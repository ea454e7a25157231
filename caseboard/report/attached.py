"""What a page shows beside the chain: each cited excerpt, and each judgment's prompt and reply.

They are read from the artifact store when the page is made from a workspace, from the export's
``.excerpts.jsonl`` sidecar when it is made from a file with one (excerpts only: prompts and replies are not
exported), and are otherwise said to be "not in this file". Each is checked against the SHA-256 its commit
recorded: ``verified``, ``mismatch`` (the bytes were altered) or ``missing`` (the store no longer has them).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from caseboard.domain import items as it
from caseboard.domain.commit import Commit
from caseboard.evidence.cited import MAX_SHOWN_BYTES, cited_in, read_excerpt, stored_bytes
from caseboard.evidence.model import ArtifactStore
from caseboard.replay.excerpts import tenant_of

NOT_IN_FILE = "not in this file"


@dataclass(frozen=True)
class Holder:
    """Where the bytes are: the artifact store of the workspace's ledger, or an export's sidecar (its excerpts
    by version and item); neither for a file exported without one."""

    store: ArtifactStore | None = None
    sidecar: dict[tuple[int, int], bytes | None] | None = None


def _absent(sha256: str | None) -> dict[str, Any]:
    return {"check": NOT_IN_FILE, "sha256": sha256, "text": None, "detail": None}


def _checked(data: bytes | None, sha256: str, where: str) -> dict[str, Any]:
    if data is None:
        return {"check": "missing", "sha256": sha256, "text": None, "detail": f"{where} does not hold it"}
    found = hashlib.sha256(data).hexdigest()
    return {
        "check": "verified" if found == sha256 else "mismatch",
        "sha256": sha256,
        "text": data[:MAX_SHOWN_BYTES].decode("utf-8", errors="replace"),
        "detail": None if found == sha256 else f"the bytes in {where} hash to {found}",
    }


def excerpts(commits: list[Commit], holder: Holder) -> list[dict[str, Any]]:
    """Every excerpt the commits cite, with its bytes and their check."""
    tenant = tenant_of(commits)
    out = []
    for cited in cited_in(commits):
        record = cited.record
        span = cited.span
        entry = {
            "version": cited.version,
            "observation": cited.observation,
            "evidence_ref": cited.evidence_ref,
            "artifact": record.get("artifact"),
            "span": f"{span.unit} {span.first}-{span.last}",
        }
        sha256 = str(record["sha256"])
        if holder.store is not None and tenant is not None:
            entry.update(_checked(read_excerpt(holder.store, tenant, cited), sha256, "the artifact store"))
        elif holder.sidecar is not None:
            data = holder.sidecar.get((cited.version, cited.item))
            entry.update(_checked(data, sha256, "the export's excerpts file"))
        else:
            entry.update(_absent(sha256))
        out.append(entry)
    return out


def calls(commits: Iterable[Commit], holder: Holder, tenant: str | None) -> list[dict[str, Any]]:
    """Every recorded model call: its prompt and reply (the artifacts its judgment names, checked)."""
    out = []
    for commit in commits:
        for item in commit.items:
            if isinstance(item, it.Judgment):
                shown = exchange(item, holder, tenant)
                out.append({"invocation_id": item.invocation_id, "version": commit.version, **shown})
    return out


def _stored(holder: Holder, tenant: str | None, sha256: str) -> dict[str, Any]:
    if holder.store is None or tenant is None:
        return _absent(sha256)
    return stored_bytes(holder.store, tenant, sha256)


def exchange(item: it.Judgment, holder: Holder, tenant: str | None) -> dict[str, Any]:
    """A judgment's ``prompt`` and ``reply``, each with its check (the console's judgments page shows them too)."""
    output = item.output
    prompt = _stored(holder, tenant, item.prompt_sha256)
    reply_id = output.get("reply_artifact")
    if isinstance(reply_id, str) and reply_id.startswith("sha256:"):
        reply = _stored(holder, tenant, reply_id.removeprefix("sha256:"))
    else:  # recorded before replies were kept: what the judgment itself holds (sealed in its commit)
        recorded = output.get("reply", output.get("raw"))
        text = None if recorded is None else recorded if isinstance(recorded, str) else json.dumps(recorded, indent=2)
        reply = {"check": "recorded", "sha256": output.get("reply_sha256"), "text": text, "detail": None}
    return {"prompt": prompt, "reply": reply}
