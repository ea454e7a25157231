"""Participants a worker runs, by name, from the entry-point group ``caseboard.participants``.

An entry point names a factory ``(kinds) -> {audience: Participant}``: the participants it offers, keyed by
the queue audience each serves (``planner``, ``verifier``, ``reporter``, ``specialist:<kind>``). caseboard
registers ``scripted`` (caseboard.workers.scripted, the deterministic demo cast). A plain ``caseboard worker``
names none and contributes nothing but the controller's and the lease sweeper's items; scripted participants
run only when asked for (``caseboard demo --live``, ``caseboard worker --participant scripted``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import entry_points
from typing import Any

from caseboard.domain.errors import ConfigurationError
from caseboard.workers.runtime import Participant

GROUP = "caseboard.participants"

Factory = Callable[[tuple[str, ...]], Mapping[str, Participant]]


def available() -> dict[str, Any]:
    """The installed participant entry points, by name."""
    return {point.name: point for point in entry_points(group=GROUP)}


def load_participants(names: Iterable[str], kinds: tuple[str, ...]) -> dict[str, Participant]:
    """The participants of every named entry point (a later name wins an audience both serve)."""
    points = available()
    cast: dict[str, Participant] = {}
    for name in names:
        point = points.get(name)
        if point is None:
            installed = ", ".join(sorted(points)) or "none"
            raise ConfigurationError(
                f"unknown participant {name!r}: installed participants ({GROUP} entry points) are {installed}"
            )
        factory: Factory = point.load()
        cast.update(factory(kinds))
    return cast
