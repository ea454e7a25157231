"""The fingerprint of a reducer's state shape: what a snapshot's data must have been dumped from to be loaded.

A snapshot holds what a reducer's ``dump`` wrote. Loaded into a state of another shape (a field added,
renamed or retyped, by a fix of the same reducer or a plugin that took its name), it could load without an
error and mean something else: a misread. So a snapshot carries the fingerprint of the shape it was dumped
from (``seal_snapshot``), and ``Workspaces`` uses it only into a state of the same fingerprint; any other is
ignored and the state folded from the ledger (``snapshot_rejected``).

The shape is the state's class and every dataclass its fields name, each with its fields' names and declared
types, in order: the SHA-256 of that description, its first 16 hex digits.
"""

from __future__ import annotations

import dataclasses
import hashlib
import typing
from typing import Any

_KNOWN: dict[str, str] = {}


def shape_fingerprint(state_type: type) -> str:
    """The fingerprint of ``state_type``'s shape (module docstring), worked out once per class."""
    key = f"{state_type.__module__}.{state_type.__qualname__}#{id(state_type)}"
    known = _KNOWN.get(key)
    if known is None:
        described: dict[str, str] = {}
        _describe(state_type, described)
        text = "\n".join(f"{name}: {fields}" for name, fields in described.items())
        known = _KNOWN[key] = hashlib.sha256(text.encode()).hexdigest()[:16]
    return known


def _describe(cls: type, described: dict[str, str]) -> None:
    name = f"{cls.__module__}.{cls.__qualname__}"
    if name in described or not dataclasses.is_dataclass(cls):
        return
    described[name] = ""  # before its fields: a record that names itself ends here
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    described[name] = ", ".join(f"{field.name}={_spelled(hints.get(field.name, field.type))}" for field in fields)
    for field in fields:
        for found in _classes_in(hints.get(field.name)):
            _describe(found, described)


def _spelled(annotation: Any) -> str:
    return annotation.__qualname__ if isinstance(annotation, type) else repr(annotation)


def _classes_in(annotation: Any) -> list[type]:
    """The classes an annotation names, at any depth (``dict[str, Rec]``, ``Rec | None``)."""
    if isinstance(annotation, type):
        return [annotation]
    return [found for arg in typing.get_args(annotation) for found in _classes_in(arg)]
