"""The registered reducers, by name: the entry points of the group ``caseboard.reducers`` (docs/reducers.md).

An entry point names a ``Reducer`` object (``workspace-rules-v1 = "caseboard.reducers.workspace_rules_v1:REDUCER"``)
whose ``name`` is the entry point's name. caseboard registers its released reducers in its own pyproject.toml;
another distribution registers its own the same way, and ``--reducer NAME`` then accepts it everywhere. The
released reducers are also known without any installed metadata (a checkout on ``PYTHONPATH``), and a plugin
may not take one of their names (asking for that name is then a ``ConfigurationError``).

Names are listed without importing anything; a reducer is imported the first time it is asked for, so a
broken plugin breaks only the commands that use it, with a ``ConfigurationError`` that names it.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points
from typing import Any

from caseboard.domain.errors import ConfigurationError, UnknownReducer
from caseboard.reducers.base import Reducer, blind_to_knowledge

GROUP = "caseboard.reducers"

RELEASED: dict[str, str] = {
    "workspace-rules-v1": "caseboard.reducers.workspace_rules_v1:REDUCER",
    "workspace-rules-v2": "caseboard.reducers.workspace_rules_v2:REDUCER",
    "workspace-rules-v3": "caseboard.reducers.workspace_rules_v3:REDUCER",
    "workspace-rules-v4": "caseboard.reducers.workspace_rules_v4:REDUCER",
}
"""caseboard's own reducers, as its pyproject.toml registers them (tests/unit/test_reducer_registry.py)."""


def _load(target: str) -> Any:
    module, _, attribute = target.partition(":")
    value: Any = importlib.import_module(module)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


class Registry(Mapping[str, Reducer[Any]]):
    """A read-only mapping of name to ``Reducer``: the released ones and the installed entry points.

    The entry points are read once, at the first use (``refresh`` reads them again, after an install)."""

    def __init__(self, group: str = GROUP, released: Mapping[str, str] = RELEASED) -> None:
        self.group = group
        self.released = dict(released)
        self._targets: dict[str, str] | None = None
        self._conflicts: dict[str, str] = {}
        self._loaded: dict[str, Reducer[Any]] = {}
        self._guard = threading.Lock()

    def refresh(self) -> None:
        with self._guard:
            self._targets = None
            self._conflicts = {}
            self._loaded = {}

    def targets(self) -> dict[str, str]:
        """Every registered name and the object it names (``module:attribute``), nothing imported."""
        with self._guard:
            if self._targets is None:
                targets = dict(self.released)
                for point in entry_points(group=self.group):
                    known = self.released.get(point.name)
                    if known is not None and known != point.value:
                        self._conflicts[point.name] = (
                            f"reducer entry point {point.name!r} ({point.value}) takes the name of "
                            f"{known}: a released reducer's name is never reused; choose a new name"
                        )
                        continue
                    targets[point.name] = point.value
                self._targets = targets
            return self._targets

    def __getitem__(self, name: str) -> Reducer[Any]:
        loaded = self._loaded.get(name)
        if loaded is not None:
            return loaded
        target = self.targets().get(name)
        if target is None:
            raise KeyError(name)
        if name in self._conflicts:  # the released name is never served by another object
            raise ConfigurationError(self._conflicts[name])
        try:
            reducer = _load(target)
        except (ImportError, AttributeError) as error:
            raise ConfigurationError(f"reducer {name!r} ({target}) cannot be loaded: {error}") from None
        if not isinstance(reducer, Reducer):
            raise ConfigurationError(
                f"reducer {name!r} ({target}) is a {type(reducer).__name__}, not a caseboard.reducers.Reducer"
            )
        if reducer.name != name:
            raise ConfigurationError(
                f"reducer {name!r} ({target}) names a reducer called {reducer.name!r}: "
                "its entry point's name and its name must be the same"
            )
        reducer = blind_to_knowledge(reducer)  # the one door: no caller folds a knowledge item by mistake
        with self._guard:
            self._loaded[name] = reducer
        return reducer

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.targets()))

    def __len__(self) -> int:
        return len(self.targets())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.targets()

    def get_reducer(self, name: str) -> Reducer[Any]:
        try:
            return self[name]
        except KeyError:
            raise UnknownReducer(name, list(self)) from None
