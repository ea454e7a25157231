"""What ``Coordinator.submit`` answers: ``Accepted`` (with what was decided about each item) or ``Refused``.

Both are frozen values that read as the contract's JSON (DESIGN.md §3): each is a read-only ``Mapping`` over
``as_json()``, so ``outcome["ok"]`` and ``outcome["items"][0]["recorded_status"]`` read what the JSON says,
and an outcome equals the dict of its JSON. ``as_json()`` is a new dict at each call, the caller's to keep or
change; the mapping reads one built on first use. Nothing is validated, and no JSON is built until it is
read: a submission answered in process pays for one slotted object per item and one for the outcome.

    {"ok": true, "workspace_version": 7, "items": [{"type": ..., "ref": ..., <decision>}, ...]}
    {"ok": true, "workspace_version": 7, "items": [...], "idempotent_replay": true}      (a retry)
    {"ok": true, "workspace_version": 7, "items": [...], "held": [{"index": 2, ...}]}    (ADR 0168)
    {"ok": false, "reason": "<token>", "message": "...", "field": "...", <details>}     (field when known)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    from caseboard.domain.errors import Reason

NAMED = ("type", "ref")


@dataclass(frozen=True, slots=True)
class ItemOutcome:
    """One item of an accepted contribution: its type, how the ledger names it (``describe``) and what the
    coordinator recorded for it. ``decision`` is the commit's own decision, a plain mapping as the commit
    keeps it, because the released reducers read decisions as dicts."""

    type: str
    ref: str
    decision: Mapping[str, Any]

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> ItemOutcome:
        """An item as an earlier outcome gave it (``{"type": ..., "ref": ..., <decision>}``)."""
        return cls(item["type"], item["ref"], {k: v for k, v in item.items() if k not in NAMED})

    def as_json(self) -> dict[str, Any]:
        return {"type": self.type, "ref": self.ref, **self.decision}


class _Outcome(Mapping[str, Any]):
    """The mapping over an outcome's JSON, built once, on first read."""

    __slots__ = ()
    _json: dict[str, Any] | None

    def as_json(self) -> dict[str, Any]:
        raise NotImplementedError

    def _view(self) -> dict[str, Any]:
        view = self._json
        if view is None:
            view = self.as_json()
            object.__setattr__(self, "_json", view)  # a cache of the frozen fields, not a field
        return view

    def __getitem__(self, key: str) -> Any:
        return self._view()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._view())

    def __len__(self) -> int:
        return len(self._view())


@dataclass(frozen=True, slots=True, eq=False)
class Accepted(_Outcome):
    """A contribution committed at ``workspace_version`` (or, ``idempotent_replay``, a retry answered with the
    original commit's outcome, nothing appended). ``decided``: one entry per item, in item order (not
    ``items``, which a mapping already has)."""

    ok: ClassVar[Literal[True]] = True
    workspace_version: int
    decided: tuple[ItemOutcome, ...]
    idempotent_replay: bool = False
    _json: dict[str, Any] | None = dataclasses.field(default=None, init=False, repr=False)

    @classmethod
    def replayed(cls, workspace_version: int, items: tuple[Mapping[str, Any], ...]) -> Accepted:
        """The outcome of a retry: the version and the items its original commit recorded."""
        return cls(workspace_version, tuple(ItemOutcome.from_json(item) for item in items), idempotent_replay=True)

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "ok": True,
            "workspace_version": self.workspace_version,
            "items": [item.as_json() for item in self.decided],
        }
        held = [
            {"index": index, "type": item.type, "ref": item.ref, **item.decision["held"]}
            for index, item in enumerate(self.decided)
            if "held" in item.decision
        ]
        if held:  # items held for lack of capacity; the others landed (ADR 0168)
            body["held"] = held
        if self.idempotent_replay:
            body["idempotent_replay"] = True
        return body


@dataclass(frozen=True, slots=True, eq=False)
class Refused(_Outcome):
    """A contribution the coordinator will not commit: nothing was appended. ``reason`` is the stable token,
    ``field`` the part of the contribution at fault when there is one, ``details`` what the reason carries
    (``current_version`` and ``since`` for a ``version_conflict``)."""

    ok: ClassVar[Literal[False]] = False
    reason: Reason
    message: str
    field: str | None = None
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    _json: dict[str, Any] | None = dataclasses.field(default=None, init=False, repr=False)

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"ok": False, "reason": self.reason.value, "message": self.message}
        if self.field is not None:
            body["field"] = self.field
        body.update(self.details)
        return body


Outcome = Accepted | Refused
