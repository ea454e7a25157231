"""State to JSON and back, for snapshots. A snapshot is derived data: losing one costs a longer fold."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from caseboard.reducers.workspace_rules_v1.state import RECORDS, WorkspaceState

SCALARS = tuple(
    f.name for f in dataclasses.fields(WorkspaceState) if f.name not in WorkspaceState.MAPPINGS
)


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"$t": value.isoformat()}
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any, annotation: str) -> Any:
    if isinstance(value, dict) and "$t" in value:
        return datetime.fromisoformat(value["$t"])
    if isinstance(value, list) and annotation.startswith("tuple"):
        return tuple(value)
    return value


def dump(state: WorkspaceState) -> dict[str, Any]:
    data: dict[str, Any] = {name: _encode(getattr(state, name)) for name in SCALARS}
    for name in WorkspaceState.MAPPINGS:
        mapping = getattr(state, name)
        if name in RECORDS:
            data[name] = [
                [key, [_encode(getattr(rec, f.name)) for f in dataclasses.fields(rec)]]
                for key, rec in mapping.items()
            ]
        else:
            data[name] = list(mapping.items())
    return data


def load(data: dict[str, Any]) -> WorkspaceState:
    state = WorkspaceState(**{name: _decode(data[name], "") for name in SCALARS})
    for name in WorkspaceState.MAPPINGS:
        record = RECORDS.get(name)
        if record is None:
            setattr(state, name, dict(data[name]))
            continue
        fields = dataclasses.fields(record)
        setattr(
            state,
            name,
            {
                key: record(*(_decode(v, str(f.type)) for v, f in zip(values, fields, strict=True)))
                for key, values in data[name]
            },
        )
    return state
