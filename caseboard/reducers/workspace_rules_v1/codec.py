"""State to JSON and back, for snapshots. A snapshot is derived data: losing one costs a longer fold.

Each record is stored as the list of its field values in field order; datetimes as ISO strings, tuples as
lists. Which fields hold datetimes or tuples is read once from the record classes, so a dump or load of a
large state does one pass over the values and no type checks.

A mapping of records is stored as its keys and, beside them, each record's JSON text (``{"keys": [...],
"texts": [...]}``), and loaded as a ``Deferred`` mapping that decodes a record when it is first read
(docs/adr/0181): a cold load of a long workspace builds a few thousand strings rather than the records' hundreds
of thousands of objects, and the commit after it reads a handful. A record never read is dumped again as the
text it was loaded from. Snapshots of the layout before (``[[key, values], ...]``) load as they did.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, ItemsView, Iterator, MutableMapping
from datetime import datetime
from operator import attrgetter
from typing import Any

from pydantic_core import from_json, to_json

from caseboard.reducers.workspace_rules_v1.state import RECORDS, WorkspaceState


@dataclasses.dataclass(frozen=True)
class RecordCodec:
    record: type[Any]
    values: Callable[[Any], tuple[Any, ...]]
    times: tuple[int, ...]
    tuples: tuple[int, ...]

    @classmethod
    def of(cls, record: type[Any]) -> RecordCodec:
        fields = dataclasses.fields(record)
        return cls(
            record,
            attrgetter(*(f.name for f in fields)),
            tuple(i for i, f in enumerate(fields) if "datetime" in str(f.type)),
            tuple(i for i, f in enumerate(fields) if str(f.type).startswith("tuple")),
        )

    def dump(self, rec: Any) -> list[Any]:
        values = list(self.values(rec))
        for i in self.times:
            if values[i] is not None:
                values[i] = values[i].isoformat()
        return values

    def load(self, values: list[Any]) -> Any:
        for i in self.times:
            if values[i] is not None:
                values[i] = datetime.fromisoformat(values[i])
        for i in self.tuples:
            values[i] = tuple(values[i])
        return self.record(*values)

    def text(self, rec: Any) -> str:
        """The record's values as compact JSON, by pydantic's encoder: five times quicker than the standard
        library's, and exact both ways (an integer of any size, a float that is not finite)."""
        return to_json(self.dump(rec)).decode()

    def read(self, text: str) -> Any:
        return self.load(from_json(text))


_ABSENT = object()


class Deferred(MutableMapping[str, Any]):
    """Records by key, each kept as its JSON text until it is first read, then as the record (in place: the
    order of the keys is the order they were written in, as a dict's)."""

    __slots__ = ("_codec", "_items")

    def __init__(self, items: dict[str, Any], codec: RecordCodec) -> None:
        self._items = items  # key -> the record, or its JSON text until it is read
        self._codec = codec

    def __getitem__(self, key: str) -> Any:
        return self._record(key, self._items[key])

    def get(self, key: str, default: Any = None) -> Any:
        value = self._items.get(key, _ABSENT)
        return default if value is _ABSENT else self._record(key, value)

    def _record(self, key: str, value: Any) -> Any:
        """The record stored under ``key`` as ``value``, decoded and kept in its place if it is still text."""
        if type(value) is str:
            value = self._items[key] = self._codec.read(value)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __setitem__(self, key: str, rec: Any) -> None:
        self._items[key] = rec

    def __delitem__(self, key: str) -> None:
        del self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Deferred({len(self._items)} records, {self.unread()} unread)"

    def unread(self) -> int:
        return sum(1 for value in self._items.values() if type(value) is str)

    def stored(self) -> ItemsView[str, Any]:
        """Each key with its record, or its text while it is unread."""
        return self._items.items()


@dataclasses.dataclass(frozen=True)
class StateCodec:
    """Dump and load of a state class whose mappings hold the given record classes (also used by later reducers
    whose state extends this one)."""

    state: type[Any]
    records: dict[str, type[Any]]

    @functools.cached_property
    def _layout(self) -> tuple[tuple[str, ...], frozenset[str], dict[str, RecordCodec]]:
        fields = dataclasses.fields(self.state)
        scalars = tuple(f.name for f in fields if f.name not in self.state.MAPPINGS)
        times = frozenset(f.name for f in fields if "datetime" in str(f.type))
        return scalars, times, {name: RecordCodec.of(record) for name, record in self.records.items()}

    def dump(self, state: Any) -> dict[str, Any]:
        scalars, times, codecs = self._layout
        data: dict[str, Any] = {}
        for name in scalars:
            value = getattr(state, name)
            data[name] = value.isoformat() if name in times and value is not None else value
        for name in self.state.MAPPINGS:
            mapping = getattr(state, name)
            codec = codecs.get(name)
            data[name] = _texts(codec, mapping) if codec else {"keys": list(mapping), "values": list(mapping.values())}
        return data

    def load(self, data: dict[str, Any]) -> Any:
        scalars, times, codecs = self._layout
        values: dict[str, Any] = {
            name: datetime.fromisoformat(data[name]) if name in times and data[name] is not None else data[name]
            for name in scalars
        }
        state = self.state(**values)
        for name in self.state.MAPPINGS:
            codec = codecs.get(name)
            pairs = data[name]
            if isinstance(pairs, list):  # the layout before ADR 0181
                setattr(state, name, {key: codec.load(values) for key, values in pairs} if codec else dict(pairs))
            elif codec is None:
                setattr(state, name, dict(zip(pairs["keys"], pairs["values"], strict=True)))
            else:
                setattr(state, name, _deferred(codec, pairs))
        return state


def _texts(codec: RecordCodec, mapping: MutableMapping[str, Any]) -> dict[str, list[str]]:
    stored = mapping.stored() if isinstance(mapping, Deferred) else mapping.items()
    keys, texts = [], []
    for key, value in stored:
        keys.append(key)
        texts.append(value if type(value) is str else codec.text(value))
    return {"keys": keys, "texts": texts}


def _deferred(codec: RecordCodec, data: dict[str, Any]) -> Deferred:
    keys, texts = data["keys"], data["texts"]
    if len(keys) != len(texts) or not set(map(type, texts)) <= {str}:
        raise ValueError("a mapping's keys and record texts do not pair up")
    return Deferred(dict(zip(keys, texts, strict=True)), codec)


STATE = StateCodec(WorkspaceState, RECORDS)


def dump(state: WorkspaceState) -> dict[str, Any]:
    return STATE.dump(state)


def load(data: dict[str, Any]) -> WorkspaceState:
    state: WorkspaceState = STATE.load(data)
    return state
