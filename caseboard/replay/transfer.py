"""Export and import of recorded incidents (docs/adr/0020-recorded-incident-format.md).

Export writes the ledger's commits as they are stored, one JSON object per line, no header: each line is
verifiable on its own (its ``hash``) and with its neighbour (``previous_hash``).

Import verifies the whole file first and refuses a broken chain, naming the first bad version, before it
writes anything. An imported incident is a record (docs/adr/0158): the ledger marks it with its head version,
and the coordinator records nothing on it but an operator's ``reopen``.
It refuses a target workspace that already exists. It then appends each commit as
recorded, through the ledger: the decisions in a recorded incident are its history, never decided again.

``--as WORKSPACE`` renames the incident. The workspace id is inside each commit's hash, so a renamed
incident cannot keep its hashes: the chain is verified as recorded, then every commit is re-sealed under
the new id (``previous_hash`` and ``hash`` recomputed in order). The import reports the source's head hash
next to the new one, so that the renamed copy can be tied back to the file it came from.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pydantic import TypeAdapter, ValidationError

from caseboard.domain.commit import MAX_COMMIT_BYTES, Commit
from caseboard.domain.errors import CaseboardError, UnknownWorkspace
from caseboard.domain.items import WorkspaceId
from caseboard.domain.workspace_key import scoped, split
from caseboard.ledger.base import EventsourcingLedger, VersionTaken
from caseboard.replay.records import decode_batch, file_records, read_ledger
from caseboard.replay.verify import ChainReport, verify_records

_ID: TypeAdapter[str] = TypeAdapter(WorkspaceId)


class ImportRefused(CaseboardError):
    """A recorded incident that will not be imported; nothing was written."""


@dataclass(frozen=True)
class Imported:
    workspace_id: str
    commits: int
    source_head_hash: str | None
    head_hash: str | None
    resealed: bool


def export_lines(ledger: EventsourcingLedger, workspace_id: str) -> Iterator[str]:
    if ledger.head(workspace_id) == 0:
        raise UnknownWorkspace(workspace_id)
    for commit in read_ledger(ledger, workspace_id):
        yield commit.model_dump_json(exclude_none=True)


def export(ledger: EventsourcingLedger, workspace_id: str, out: IO[str]) -> int:
    count = 0
    for line in export_lines(ledger, workspace_id):
        out.write(line + "\n")
        count += 1
    return count


def renamed(commits: Iterator[Commit], workspace_id: str) -> Iterator[Commit]:
    """The same commits under another workspace id, re-sealed in order into a new chain."""
    previous: str | None = None
    for commit in commits:
        sealed = commit.model_copy(
            update={"workspace_id": workspace_id, "previous_hash": previous, "hash": None}
        ).sealed()
        previous = sealed.hash
        yield sealed


def import_file(
    ledger: EventsourcingLedger, path: Path, workspace_id: str | None = None, anchor: str | None = None
) -> Imported:
    """Verify the file's chain (and that it holds the commit of ``anchor``, a head hash kept elsewhere, when
    one is given), then append all of it in one transaction."""
    records = list(file_records(path))  # read once: what is appended is exactly what was verified
    report: ChainReport = verify_records(records, str(path), anchor)
    if report.problem is not None:
        raise ImportRefused(
            f"{path} is not an intact recorded incident: version {report.problem.version} is "
            f"{report.problem.kind} ({report.problem.detail}); nothing was imported"
        )
    source_key = report.workspace_id or ""  # the key: <tenant>/<id>, or a legacy bare id (docs/adr/0130)
    tenant, source_id = split(source_key)
    target_id = workspace_id or source_id
    if tenant is not None and "/" in target_id:
        raise ImportRefused(f"--as {target_id!r}: the incident stays in its tenant {tenant!r}; give a bare id")
    try:
        _ID.validate_python(target_id)
    except ValidationError:
        raise ImportRefused(
            f"--as {target_id!r}: a workspace id is letters, digits and . _ : @ - (no '/'), at most 128"
        ) from None
    target = target_id if tenant is None else scoped(tenant, target_id)
    if ledger.head(target) != 0:
        raise ImportRefused(f"workspace {target!r} already exists in this ledger; import with --as ANOTHER_ID")
    commits: Iterator[Commit] = iter(decode_batch(records))
    if target != source_key:
        commits = renamed(commits, target_id)
    recorded = list(commits)
    if target != source_key:  # a longer id makes a longer commit: none may pass what a reader reads (ADR 0193)
        longest = max(recorded, key=lambda commit: len(commit.stored_json), default=None)
        if longest is not None and len(longest.stored_json) > MAX_COMMIT_BYTES:
            raise ImportRefused(
                f"version {longest.version} would be {len(longest.stored_json)} bytes as {target!r}, over the "
                f"{MAX_COMMIT_BYTES} a commit may be; nothing was imported"
            )
    if recorded:  # marked before its commits land: a workspace that can be read is known to be a record
        ledger.mark_imported(target, recorded[-1].version, report.head_hash)
    try:
        ledger.append_many(recorded)
    except VersionTaken:
        ledger.unmark_imported(target)
        raise ImportRefused(f"workspace {target!r} was created while importing; nothing was imported") from None
    except BaseException:
        with contextlib.suppress(CaseboardError):  # a mark stays only beside commits that may have landed
            if ledger.head(target) == 0:
                ledger.unmark_imported(target)
        raise
    head = recorded[-1].hash if recorded else None
    return Imported(target, len(recorded), report.head_hash, head, target != source_key)
