"""The ledger's record of one accepted contribution: its items as submitted, and the coordinator's decisions.

A commit holds inputs and recorded judgments only, never derived state. ``decisions`` has one entry per item,
in item order: what the coordinator decided at commit time (selection, a claim's generation and lease, an
escalation), so that any reducer can fold the commit without deciding again.

Commits form a hash chain: ``hash`` is the SHA-256 of the commit's JSON as stored, without its final
``"hash"`` member (``{...,"previous_hash":"...","hash":"<hex>"}`` minus ``,"hash":"<hex>"``), and
``previous_hash`` is the hash of the commit before it (absent on version 1). Altering a stored commit breaks
its own hash; re-sealing it breaks the next commit's ``previous_hash``. A sealed commit keeps the exact bytes
it is stored as (a private attribute), so the ledger does not serialize it a second time.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, Field, PrivateAttr, model_validator

from caseboard.domain.contribution import Author, IdempotencyKey
from caseboard.domain.items import ID_PATTERN, ITEMS, Frozen, Id, Item
from caseboard.domain.outcome import Accepted, ItemOutcome
from caseboard.domain.workspace_key import scoped

COMMIT_TOPIC = "caseboard.commit"
"""The stored name of a commit in the ledger; never a module path."""

MAX_COMMIT_BYTES = 16 * 1024 * 1024
"""The most bytes a commit is stored as. A contribution's body is at most 2 MiB (``coordinator/parse.py``'s
``MAX_BODY_BYTES``), which seals to far less than this; the coordinator refuses a commit that would be longer,
and a reader of a recorded incident does not read a longer line (docs/adr/0193)."""

COMMIT_SCHEMA_VERSION = 2
"""Schema 2 adds ``tenant_id``: the commit belongs to the workspace (tenant_id, workspace_id), stored under the
key ``<tenant_id>/<workspace_id>`` (``caseboard.domain.workspace_key``). A commit of schema 1 has none and
belongs to the legacy namespace, under its bare id (docs/adr/0130)."""

Decision = dict[str, Any]


class Commit(Frozen):
    schema_version: Literal[1, 2] = 1
    workspace_id: Id
    tenant_id: Id | None = None
    """Schema 2: the tenant whose namespace the workspace id is in (hashed with the rest); None on schema 1."""
    version: Annotated[int, Field(ge=1)]
    at: AwareDatetime
    author: Author
    expected_version: int | None = None
    idempotency_key: IdempotencyKey | None = None
    digest: str | None = None
    items: tuple[Item, ...]
    decisions: tuple[Decision, ...]
    previous_hash: str | None = None
    hash: str | None = None  # declared last: it is the last member of the stored JSON
    _stored: bytes | None = PrivateAttr(default=None)
    """The stored bytes, once known: a private attribute, which pydantic lets a frozen model set."""

    def __eq__(self, other: object) -> bool:
        """Equal when their fields are: the stored bytes one keeps and the other has yet to make are not."""
        if not isinstance(other, Commit):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = Frozen.__hash__

    @model_validator(mode="after")
    def _tenant_matches_schema(self) -> Commit:
        if (self.schema_version == 2) != (self.tenant_id is not None):
            raise ValueError("a commit carries tenant_id exactly when its schema_version is 2")
        return self

    @property
    def key(self) -> str:
        """The key the ledger stores the commit under: ``<tenant_id>/<workspace_id>``, or the bare id of a
        legacy (schema 1) workspace."""
        tenant = self.tenant_id
        return self.workspace_id if tenant is None else scoped(tenant, self.workspace_id)

    def content_hash(self) -> str:
        return hashlib.sha256(self._body()).hexdigest()

    def sealed(self) -> Commit:
        """A copy with its hash and the bytes it is stored as."""
        return self.model_copy(update={"hash": None})._seal()

    @classmethod
    def new_sealed(cls, **fields: Any) -> Commit:
        """``Commit(**fields).sealed()`` without the copy: the commit is sealed before anyone else holds it
        (``fields`` name no hash)."""
        return cls(**fields)._seal()

    def _seal(self) -> Commit:
        """This commit, which nobody else holds yet and whose hash is None, given its hash in place and the bytes
        it is stored as."""
        body = self.model_dump_json(exclude_none=True).encode()  # without the hash, which is None until now
        digest = hashlib.sha256(body).hexdigest()
        self.__dict__["hash"] = digest  # the one write past ``frozen``: before the commit is anyone's
        self._stored = body[:-1] + b',"hash":"' + digest.encode() + b'"}'
        return self

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Commit:
        copy = super().model_copy(update=update, deep=deep)
        if update:
            copy._stored = None  # the stored bytes were those of the original
        return copy

    @property
    def stored_json(self) -> bytes:
        """The commit as the ledger stores it (compact JSON, absent fields left out). A sealed commit has the
        bytes it was sealed from; another is serialized on first use, and keeps the bytes."""
        stored = self._stored  # read once: a private attribute is looked up through pydantic's __getattr__
        if stored is None:
            stored = self._stored = self.model_dump_json(exclude_none=True).encode()
        return stored

    def _body(self) -> bytes:
        return self.model_dump_json(exclude_none=True, exclude={"hash"}).encode()

    def outcome_items(self) -> list[dict[str, Any]]:
        """Each item with what the coordinator decided about it, as returned to the submitter."""
        return [
            {"type": item.type, "ref": describe(item), **decision}
            for item, decision in zip(self.items, self.decisions, strict=True)
        ]

    def outcome(self) -> Accepted:
        """What the coordinator answers the submitter: the version, and each item's decision."""
        decided = [
            ItemOutcome(item.type, describe(item), decision)
            for item, decision in zip(self.items, self.decisions, strict=True)
        ]
        return Accepted(self.version, tuple(decided))

    def summary(self) -> dict[str, Any]:
        """A short account of the commit, for a writer that has to catch up."""
        return {
            "workspace_version": self.version,
            "at": _iso(self.at),
            "author": self.author.principal,
            "items": [describe(item) for item in self.items],
        }


HASH_MEMBER = b',"hash":"'
SEALED_TAIL = len(HASH_MEMBER) + 64 + 2  # ,"hash":"<64 hex>"}


def seal(body: bytes) -> bytes:
    """A JSON object's bytes sealed: ``,"hash":"<SHA-256 of body>"`` added as its last member."""
    return body[:-1] + HASH_MEMBER + hashlib.sha256(body).hexdigest().encode() + b'"}'


def stored_hash(data: bytes) -> str | None:
    """The SHA-256 of sealed bytes without their final ``,"hash":"<hex>"`` member (the bytes they were sealed
    from: compare it with the hash they record), or None when the bytes do not end with such a member."""
    if len(data) <= SEALED_TAIL or data[-SEALED_TAIL:-66] != HASH_MEMBER or data[-2:] != b'"}':
        return None
    digest = hashlib.sha256(memoryview(data)[:-SEALED_TAIL])  # not a copy: a snapshot is megabytes
    digest.update(b"}")
    return digest.hexdigest()


def recorded_hash(data: bytes) -> str | None:
    """The hash sealed bytes record (their last member), without parsing them."""
    if len(data) <= SEALED_TAIL or data[-SEALED_TAIL:-66] != HASH_MEMBER:
        return None
    return data[-66:-2].decode("ascii", "replace")


PREVIOUS_MEMBER = b',"previous_hash":"'
_LINK = len(PREVIOUS_MEMBER) + 65
"""The length of ``,"previous_hash":"<64 hex>"``, which ends just before a sealed commit's hash member."""
_ID = ID_PATTERN.strip("^$").encode()
_LEADING = re.compile(
    rb'\{"schema_version":(?P<schema>[12]),"workspace_id":"(?P<id>' + _ID + rb')"'
    rb'(?:,"tenant_id":"(?P<tenant>' + _ID + rb')")?,"version":(?P<version>[1-9][0-9]{0,17}),'
)


class SealedChain:
    """A chain of sealed commits read by their bytes' hashes and links alone: each next record must hash to the hash
    it records (``stored_hash``) and name the hash before it as its ``previous_hash``, where the commit's compact
    JSON puts both (its last two members). Its workspace and version are read where the chain is taken up
    (``at``), and counted on from there. Nothing else of the bytes is parsed.

    Only for bytes that a hash kept elsewhere shows to be sealed commits' own, by the links that lead to it
    (``verify --anchor``, docs/adr/0197): the commits caseboard seals follow one another, version by version, in
    one workspace; in other bytes, a member may be stated twice, and only parsing says which one counts."""

    def __init__(self, key: str, version: int, previous: bytes | None) -> None:
        self.key = key
        self.version = version
        """The version of the next record."""
        self.previous = previous
        """The hash the next record must name as its ``previous_hash`` (ASCII hex), None before version 1."""
        self._link = None if previous is None else b'%s%s"' % (PREVIOUS_MEMBER, previous)  # what ends before its hash

    @classmethod
    def at(cls, data: bytes) -> SealedChain | None:
        """The chain as it stands before the record ``data``, by what ``data`` states; None when it states no
        workspace and version where a sealed commit's compact JSON does (its first members)."""
        leading = _LEADING.match(data)
        end = len(data) - SEALED_TAIL  # where the hash member begins
        if leading is None or end <= leading.end():
            return None
        schema, workspace_id, tenant, version = leading.groups()
        if (schema == b"2") != (tenant is not None):
            return None
        key = workspace_id.decode() if tenant is None else scoped(tenant.decode(), workspace_id.decode())
        link = data[end - _LINK : end] if end >= _LINK else b""
        previous = link[len(PREVIOUS_MEMBER) : -1] if link.startswith(PREVIOUS_MEMBER) else None
        return cls(key, int(version), previous)

    def follow(self, data: bytes) -> bytes | None:
        """The hash of the record ``data`` (ASCII hex) when it is the chain's next link, which the chain then ends
        with; None when it is not."""
        end = len(data) - SEALED_TAIL
        link = data[end - _LINK : end] if end >= _LINK else b""
        if link != self._link if self._link else link.startswith(PREVIOUS_MEMBER):
            return None
        # ``stored_hash`` and ``recorded_hash`` compared, written out: this runs once a line of an export, and the
        # two calls cost ~0.3-0.45 us of its ~1.9 (ADR 0197's goal holds by less than that on a busy host)
        digest = hashlib.sha256(data[:end])  # a copy: a commit's line, not a snapshot's megabytes
        digest.update(b"}")
        recorded = digest.hexdigest().encode()
        if data[end:] != b'%s%s"}' % (HASH_MEMBER, recorded):
            return None
        self.version += 1
        self.previous = recorded
        self._link = b'%s%s"' % (PREVIOUS_MEMBER, recorded)
        return recorded


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def describe(item: Item) -> str:
    """The item in a commit's summary, as its type declares it (``caseboard.domain.items.ITEMS``)."""
    return ITEMS[item.type].describe(item)
