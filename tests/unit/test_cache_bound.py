"""The workspace cache is bounded by the commits folded into its states, not only by their number (ADR 0182):
a process's memory follows the commits it holds, whatever the sizes of its workspaces.

- past ``max_commits`` the least recently used states are dropped, never the one just used;
- a state that grows by commits is weighed again at each snapshot;
- ``CASEBOARD_CACHE_COMMITS`` sets the bound, and a value that is not a count is refused in one line.
"""

from __future__ import annotations

from typing import Any

import pytest

from caseboard.app import build_app
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.errors import ConfigurationError
from caseboard.ledger import open_ledger
from caseboard.ledger.base import EventsourcingLedger
from caseboard.projections.workspaces import CACHE_COMMITS, Workspaces
from caseboard.settings import Settings
from tests.unit.board import obs, open_item


def contribution(workspace_id: str, role: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"workspace_id": workspace_id, "author": {"principal": f"{role}-1", "role": role}, "items": [item]}


def observation(workspace_id: str, number: int) -> dict[str, Any]:
    return contribution(workspace_id, "specialist", obs(f"obs-{number}", f"auth failures (sample {number})"))


def written(ledger: EventsourcingLedger, workspace_id: str, commits: int) -> str:
    """A workspace ``commits`` long (its opening, then observations); its key."""
    coordinator = Coordinator(ledger)
    assert coordinator.submit(parse_contribution(contribution(workspace_id, "operator", open_item()))).ok
    for number in range(1, commits):
        assert coordinator.submit(parse_contribution(observation(workspace_id, number))).ok
    [key] = ledger.keys_named(workspace_id)
    return key


def held(workspaces: Workspaces) -> list[str]:
    return [key for key, _ in workspaces.cached_heads()]


def test_past_its_commits_the_cache_drops_the_least_recently_used() -> None:
    ledger = open_ledger("memory://")
    a, b, c = (written(ledger, name, 100) for name in ("ws-a", "ws-b", "ws-c"))
    workspaces = Workspaces(ledger, max_commits=250)
    workspaces.current(a), workspaces.current(b)
    assert held(workspaces) == [a, b]
    workspaces.current(c)  # 300 commits: the oldest goes
    assert held(workspaces) == [b, c]
    workspaces.current(b)
    workspaces.current(a)  # c is now the least recently used
    assert held(workspaces) == [b, a]
    assert workspaces.current(c).version == 100  # loaded again from the ledger, whole
    alone = Workspaces(ledger, max_commits=50)
    alone.current(a)
    assert held(alone) == [a]  # larger than the bound alone: kept, or every read would load it again


def test_a_state_that_grows_by_commits_is_weighed_at_its_snapshots() -> None:
    ledger = open_ledger("memory://")
    a, b = written(ledger, "ws-a", 100), written(ledger, "ws-b", 100)
    workspaces = Workspaces(ledger, max_commits=250, snapshot_min=20)
    coordinator = Coordinator(ledger, workspaces)
    workspaces.current(a), workspaces.current(b)
    for number in range(100, 140):  # b reaches 140: 240 held, both kept
        assert coordinator.submit(parse_contribution(observation("ws-b", number))).ok
    assert held(workspaces) == [a, b]
    for number in range(140, 161):  # past 150 held; the snapshot at 160 weighs it
        assert coordinator.submit(parse_contribution(observation("ws-b", number))).ok
    assert held(workspaces) == [b]
    assert workspaces.current(b).version == 161 and ledger.head(b) == 161
    assert workspaces.current(a).version == 100


def test_the_bound_is_a_setting() -> None:
    assert Settings().cache_commits == CACHE_COMMITS == Workspaces(open_ledger("memory://")).max_commits
    settings = Settings.from_env({"CASEBOARD_CACHE_COMMITS": "5000"})
    app = build_app(settings, database_url="memory://")
    try:
        assert app.workspaces.max_commits == 5000
    finally:
        app.close()
    for wrong, said in (("0", "at least 1"), ("lots", "a whole number")):
        with pytest.raises(ConfigurationError, match=f"CASEBOARD_CACHE_COMMITS must be {said}"):
            Settings.from_env({"CASEBOARD_CACHE_COMMITS": wrong})
