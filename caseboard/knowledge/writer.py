"""Writing the knowledge store from the ledger: only ``promote`` and ``retire`` items, only as committed.

``deliver(store, commit)`` writes what one commit's knowledge items say, idempotently: an entry's id is
``<workspace>:<version>:<item index>`` of its promotion, so a commit delivered twice lands once, and a
retirement is applied once. ``KnowledgeWriter`` follows the ledger's notification log (the outbox) from the
position the store keeps, as the MCP catalog does; ``rebuild`` reads the whole log into a fresh store, and
``audit`` checks each entry against the ledger: the promotion and the verification behind it must be there.
A workspace's replay never reads any of this.

Text the parser now refuses (NUL and other control characters, docs/adr/0140) may still be in a ledger
committed before, or imported from an old export: an entry's text fields are written with each such character
as its visible escape (``\\u0000``), and a ``knowledge_text_escaped`` warning names the entry, so that the store,
which PostgreSQL would refuse it in, goes on serving every tenant.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace

import structlog

from caseboard.dispatcher.outbox import START, Outbox, open_outbox
from caseboard.domain import items as it
from caseboard.domain.commit import Commit
from caseboard.domain.text import control_in, visible
from caseboard.knowledge.store import Entry, KnowledgeStore, when
from caseboard.ledger import EventsourcingLedger

BATCH = 500
POSITION = "writer"

log = structlog.get_logger("caseboard.knowledge")


def entry_id(workspace_id: str, version: int, index: int) -> str:
    return f"{workspace_id}:{version}:{index}"


def deliver(store: KnowledgeStore, commit: Commit, ledger: EventsourcingLedger) -> int:
    """Apply ``commit``'s knowledge items to the store; how many entries it wrote or retired (0 on a second
    delivery). ``ledger`` gives the excerpt hashes recorded with the evidence of a promotion."""
    changed = 0
    for index, (item, decision) in enumerate(zip(commit.items, commit.decisions, strict=True)):
        if isinstance(item, it.Promote):
            entry = promoted(commit, index, item, decision)
            versions = decision.get("evidence_versions")
            if isinstance(versions, dict) and versions:
                entry = replace(entry, excerpts=excerpts(ledger, commit.key, versions))
            changed += store.insert(storable(entry))
        elif isinstance(item, it.Verification) and item.result == "refuted":
            where = entry_id(commit.workspace_id, commit.version, index)
            changed += store.refute(commit.key, item.claim, when(commit.at), where)
        elif isinstance(item, it.Retire):
            where = entry_id(commit.workspace_id, commit.version, index)
            reason, contradicted_by = (_storable(where, text) for text in (item.reason, item.contradicted_by))
            changed += store.retire(
                str(decision["tenant_id"]),
                _storable(where, item.entry),
                when(commit.at),
                reason,
                contradicted_by,
                where,
            )
    return changed


def storable(entry: Entry) -> Entry:
    """``entry`` with every refused control character in its text escaped (a warning when there was one)."""
    changes: dict[str, object] = {}
    for spec in fields(entry):
        value = getattr(entry, spec.name)
        if isinstance(value, str) and control_in(value):
            changes[spec.name] = _storable(entry.entry_id, value)
        elif spec.name == "evidence" and any(control_in(ref) for ref in value):
            changes[spec.name] = tuple(_storable(entry.entry_id, ref) for ref in value)
    return replace(entry, **changes) if changes else entry  # type: ignore[arg-type]


def _storable(entry: str, text: str) -> str:
    if not control_in(text):
        return text
    log.warning("knowledge_text_escaped", entry_id=visible(entry), reason="control characters written as escapes")
    return visible(text)


def promoted(commit: Commit, index: int, item: it.Promote, decision: dict[str, object]) -> Entry:
    """The entry a promotion writes, from the item and the provenance its rule recorded."""
    evidence = decision.get("evidence", ())
    return Entry(
        tenant_id=str(decision["tenant_id"]),
        entry_id=entry_id(commit.workspace_id, commit.version, index),
        workspace_id=commit.key,
        version=commit.version,
        item_index=index,
        finding=item.finding,
        finding_kind=str(decision["finding_kind"]),
        statement=item.statement,
        service=item.scope.service,
        environment=item.scope.environment,
        owner=item.owner,
        valid_from=when(item.valid_from or commit.at),
        valid_until=None if item.valid_until is None else when(item.valid_until),
        recorded_at=when(commit.at),
        verification_version=int(str(decision["verification_version"])),
        verified_by=None if decision.get("verified_by") is None else str(decision["verified_by"]),
        verified_hypothesis=str(decision["verified_hypothesis"]),
        evidence=tuple(str(ref) for ref in evidence) if isinstance(evidence, list | tuple) else (),
        suspicious=signals(decision.get("suspicious")),
    )


def signals(flags: object) -> tuple[str, ...]:
    """The signals of a decision's ``suspicious`` record (``[{"field", "signals"}, ...]``), each once."""
    found: list[str] = []
    for flag in flags if isinstance(flags, list) else ():
        for signal in flag.get("signals", ()) if isinstance(flag, dict) else ():
            if str(signal) not in found:
                found.append(str(signal))
    return tuple(found)


def excerpts(ledger: EventsourcingLedger, workspace_id: str, versions: dict[str, int]) -> tuple[tuple[str, str], ...]:
    """The SHA-256 the coordinator recorded for each cited excerpt among the observations at ``versions``."""
    found: dict[str, str] = {}
    for ref, version in versions.items():
        for commit in ledger.read(workspace_id, int(version) - 1, int(version)):
            for decision in commit.decisions:
                excerpt = decision.get("excerpt")
                if decision.get("id") == ref and isinstance(excerpt, dict) and excerpt.get("sha256"):
                    found[ref] = str(excerpt["sha256"])
    return tuple(sorted(found.items()))


def carries_knowledge(commit: Commit) -> bool:
    """Whether ``commit`` changes the store: a promotion, a retirement, or a verification refuting a claim an
    entry may rest on."""
    return any(
        item.type in it.KNOWLEDGE_ITEMS or (isinstance(item, it.Verification) and item.result == "refuted")
        for item in commit.items
    )


class KnowledgeWriter:
    """Follows the outbox from the store's position and delivers every commit carrying knowledge items.

    The position is saved after the commits it covers are written: a crash in between delivers them again,
    which writes nothing twice."""

    def __init__(self, ledger: EventsourcingLedger, store: KnowledgeStore) -> None:
        self.ledger = ledger
        self.outbox: Outbox = open_outbox(ledger)
        self.store = store
        self._lock = threading.Lock()

    def catch_up(self) -> int:
        """Deliver everything committed since the saved position; how many entries changed."""
        changed = 0
        with self._lock:
            position = self.store.position(POSITION)
            while True:
                entries = self.outbox.read(position, BATCH)
                for entry in entries:
                    if carries_knowledge(entry.commit):
                        changed += deliver(self.store, entry.commit, self.ledger)
                if entries:
                    position = entries[-1].position
                    self.store.save_position(POSITION, position)
                if len(entries) < BATCH:
                    return changed


def rebuild(ledger: EventsourcingLedger) -> list[Entry]:
    """The store's rows as the ledger alone gives them: every commit of its log, from the start, into a fresh
    store in memory."""
    outbox = open_outbox(ledger)
    scratch = KnowledgeStore(":memory:")
    try:
        position = START
        while True:
            entries = outbox.read(position, BATCH)
            for entry in entries:
                if carries_knowledge(entry.commit):
                    deliver(scratch, entry.commit, ledger)
            if entries:
                position = entries[-1].position
            if len(entries) < BATCH:
                return scratch.entries()
    finally:
        scratch.close()


@dataclass(frozen=True)
class Unbacked:
    """An entry without a verification behind it in the ledger, and why."""

    entry: Entry
    problem: str


def audit(entries: Iterable[Entry], ledger: EventsourcingLedger) -> list[Unbacked]:
    """Each entry checked against the ledger, not against what the entry says of itself: its promotion commit
    holds a ``promote`` of its finding at its index, the workspace is the entry's tenant's, and the commit at
    its verification version holds a ``verification`` that confirmed its hypothesis, before the promotion."""
    found: list[Unbacked] = []
    for entry in entries:
        problem = _unbacked(entry, ledger)
        if problem is not None:
            found.append(Unbacked(entry, problem))
    return found


def _unbacked(entry: Entry, ledger: EventsourcingLedger) -> str | None:
    opened = ledger.read(entry.workspace_id, 0, 1)
    if not opened or not isinstance(opened[0].items[0], it.Open):
        return f"workspace {entry.workspace_id!r} is not in the ledger"
    if opened[0].items[0].scope.tenant_id != entry.tenant_id:
        return f"workspace {entry.workspace_id!r} is not tenant {entry.tenant_id!r}'s"
    promotion = ledger.read(entry.workspace_id, entry.version - 1, entry.version)
    items = promotion[0].items if promotion else ()
    if entry.item_index >= len(items) or not (
        isinstance(items[entry.item_index], it.Promote) and items[entry.item_index].finding == entry.finding  # type: ignore[union-attr]
    ):
        return f"no promotion of {entry.finding!r} at version {entry.version}, item {entry.item_index}"
    if entry.verification_version >= entry.version:
        return f"the verification (version {entry.verification_version}) is not before the promotion"
    verifying = ledger.read(entry.workspace_id, entry.verification_version - 1, entry.verification_version)
    confirmed = [
        item
        for commit in verifying
        for item in commit.items
        if isinstance(item, it.Verification) and item.claim == entry.verified_hypothesis and item.result == "confirmed"
    ]
    if not confirmed:
        return f"no verification confirming {entry.verified_hypothesis!r} at version {entry.verification_version}"
    return None
