"""State to JSON and back, for snapshots. A snapshot is derived data: losing one costs a longer fold.

Each record is stored as the list of its field values in field order; datetimes as ISO strings, tuples as
lists. Which fields hold datetimes or tuples is read once from the record classes, so a dump or load of a
large state does one pass over the values and no type checks.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from datetime import datetime
from operator import attrgetter
from typing import Any

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
            data[name] = [[key, codec.dump(rec)] for key, rec in mapping.items()] if codec else list(mapping.items())
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
            setattr(state, name, {key: codec.load(values) for key, values in pairs} if codec else dict(pairs))
        return state


STATE = StateCodec(WorkspaceState, RECORDS)


def dump(state: WorkspaceState) -> dict[str, Any]:
    return STATE.dump(state)


def load(data: dict[str, Any]) -> WorkspaceState:
    state: WorkspaceState = STATE.load(data)
    return state
