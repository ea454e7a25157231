"""Cited excerpts beside a recorded incident, and their check by ``verify`` (docs/adr/0082).

``caseboard export WS --out FILE --with-excerpts`` writes ``FILE.excerpts.jsonl`` next to ``FILE``: one JSON
object per cited excerpt, in ledger order: ``version``, ``item``, ``observation``, ``evidence_ref``,
``artifact``, ``lines`` or ``bytes``, ``sha256`` (as recorded at commit), and the excerpt as ``text`` (UTF-8)
or ``base64``, or ``removed: true`` when the store no longer had it. The commit file itself is unchanged.

``verify`` then checks every excerpt that the chain's decisions recorded against the recorded SHA-256: from
the sidecar for a file, from the artifact store for a workspace, and names the first that does not match.
The hash that counts is the commit's (the chain vouches for it), never the sidecar's own ``sha256``.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from caseboard.domain.citations import MAX_EXCERPT_BYTES
from caseboard.domain.commit import Commit
from caseboard.domain.errors import CaseboardError
from caseboard.domain.items import Open
from caseboard.evidence.cited import CitedExcerpt, cited_in, read_excerpt
from caseboard.evidence.model import ArtifactStore
from caseboard.replay.verify import ChainReport, Problem

SIDECAR_SUFFIX = ".excerpts.jsonl"
MAX_LINE = 8 * MAX_EXCERPT_BYTES
"""The longest sidecar line read: an excerpt of ``MAX_EXCERPT_BYTES`` as JSON text, where a control character
takes six bytes (``\u0001``), with its record's other fields."""


def sidecar_of(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


def tenant_of(commits: list[Commit]) -> str | None:
    first = commits[0].items[0] if commits and commits[0].items else None
    return first.scope.tenant_id if isinstance(first, Open) else None


def write_excerpts(commits: list[Commit], store: ArtifactStore, out: IO[str]) -> int:
    tenant = tenant_of(commits)
    count = 0
    for cited in cited_in(commits):
        data = read_excerpt(store, tenant, cited) if tenant is not None else None
        record: dict[str, Any] = {
            "version": cited.version,
            "item": cited.item,
            "observation": cited.observation,
            "evidence_ref": cited.evidence_ref,
            **cited.record,
        }
        if data is None:
            record["removed"] = True
        else:
            try:
                record["text"] = data.decode("utf-8")
            except UnicodeDecodeError:
                record["base64"] = base64.b64encode(data).decode("ascii")
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count


def read_sidecar(path: Path) -> dict[tuple[int, int], bytes | None]:
    """The excerpts of a sidecar by (version, item): their bytes, None for one the store no longer had. A line
    that is no excerpt record (a damaged or forged file) is a ``CaseboardError`` naming the line, never taken."""
    found: dict[tuple[int, int], bytes | None] = {}
    try:
        with path.open("rb") as handle:
            for number, line in enumerate(iter(lambda: handle.readline(MAX_LINE + 1), b""), 1):
                try:
                    if len(line) > MAX_LINE:  # no excerpt is: the rest of the line is not read (ADR 0193)
                        raise ValueError(f"longer than {MAX_LINE} bytes; not read")
                    key, excerpt = _excerpt(json.loads(line))
                except (ValueError, KeyError) as error:  # bad JSON or UTF-8, a bad field, bad base64
                    problem = f"no {error.args[0]!r}" if isinstance(error, KeyError) else str(error)[:200]
                    raise CaseboardError(f"{path}:{number}: not an excerpt record ({problem})") from None
                found[key] = excerpt
    except OSError as error:
        raise CaseboardError(f"cannot read {path}: {error.strerror or error}") from None
    return found


def _excerpt(record: Any) -> tuple[tuple[int, int], bytes | None]:
    """One sidecar line's key and bytes (``read_sidecar``); ``ValueError`` or ``KeyError`` when it is none."""
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    key = record["version"], record["item"]
    if not all(type(part) is int for part in key):
        raise ValueError("version and item are integers")
    if "text" in record:
        if not isinstance(record["text"], str):
            raise ValueError("text is a string")
        return key, record["text"].encode("utf-8")
    if "base64" in record:
        if not isinstance(record["base64"], str):
            raise ValueError("base64 is a string")
        return key, base64.b64decode(record["base64"], validate=True)
    return key, None


def check_excerpts(
    report: ChainReport, commits: Iterable[Commit], *, sidecar: Path | None = None, store: ArtifactStore | None = None
) -> ChainReport:
    """``report`` with the first cited excerpt that does not match its recorded SHA-256 as its problem
    (kind ``excerpt_mismatch``); unchanged when every excerpt that can be read matches. An excerpt neither in
    the sidecar nor in the store (removed under retention) cannot be checked and is not a mismatch."""
    if not report.intact:
        return report
    listed = list(commits)
    given = read_sidecar(sidecar) if sidecar is not None and sidecar.exists() else {}
    tenant = tenant_of(listed)
    for cited in cited_in(listed):
        key = (cited.version, cited.item)
        where = f"{sidecar}" if key in given else "the artifact store"
        data = given.get(key)
        if data is None and store is not None and tenant is not None:
            data = read_excerpt(store, tenant, cited)
        if data is None:
            continue
        problem = _mismatch(cited, data, where)
        if problem is not None:
            return dataclasses.replace(report, problem=problem)
    return report


def _mismatch(cited: CitedExcerpt, data: bytes, where: str) -> Problem | None:
    found = hashlib.sha256(data).hexdigest()
    if found == cited.record["sha256"]:
        return None
    return Problem(
        cited.version,
        "excerpt_mismatch",
        f"items[{cited.item}] cites {cited.evidence_ref}: the excerpt in {where} has sha256 {found}, "
        f"the commit recorded {cited.record['sha256']}",
    )
