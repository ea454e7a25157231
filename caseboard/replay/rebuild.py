"""Rebuilding a projection from recorded commits alone: the reducer's fold, from version 1, no snapshots.

``replay`` never writes, never notifies and never calls a model: it reads commits (a file or the ledger's
rows), folds them with the named reducer and renders the version asked for. The fold is the same one
``show --at-version`` uses, and the document is rendered by the same reducer, so the two are identical.
Snapshots are not used: they are derived data, and a replay is the check that does not trust derived data.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from caseboard.domain.commit import Commit
from caseboard.domain.errors import CaseboardError, UnknownWorkspace, VersionOutOfRange
from caseboard.ledger.base import EventsourcingLedger
from caseboard.reducers import Reducer, WorkspaceState, get_reducer
from caseboard.replay.audit import checked_file_commits, checked_ledger_commits
from caseboard.replay.records import read_file, read_ledger


class BrokenRecord(CaseboardError):
    """Commits that cannot be folded in the order given (a gap, a repeat, another workspace)."""


def fold(
    commits: Iterable[Commit],
    reducer: Reducer[WorkspaceState],
    upto: int | None = None,
    source: str = "the record",
) -> WorkspaceState:
    """The state after version ``upto`` (the last commit when None); beyond the head is an error."""
    if upto is not None and upto < 1:
        raise CaseboardError(f"--to {upto}: versions start at 1")
    state: WorkspaceState | None = None
    for commit in commits:
        if upto is not None and commit.version > upto:
            break
        if state is None:
            state = reducer.initial(commit.workspace_id)
        if commit.workspace_id != state.workspace_id or commit.version != state.version + 1:
            raise BrokenRecord(
                f"{source}: version {commit.version} of {commit.workspace_id!r} cannot follow version "
                f"{state.version} of {state.workspace_id!r}; run 'caseboard verify' on it"
            )
        state = reducer.evolve(state, commit)
    if state is None:
        raise CaseboardError(f"{source} holds no commits")
    if upto is not None and state.version < upto:
        raise VersionOutOfRange(state.workspace_id, upto, state.version)
    return state


def states(commits: Iterable[Commit], reducer: Reducer[WorkspaceState]) -> Iterator[WorkspaceState]:
    """The state after each commit, in order (each yielded state is changed by the next step)."""
    state: WorkspaceState | None = None
    for commit in commits:
        state = reducer.initial(commit.workspace_id) if state is None else state
        yield reducer.evolve(state, commit)


def replay_file(
    path: Path, upto: int | None = None, reducer: str | None = None, *, verify: bool = True
) -> dict[str, Any]:
    """The projection at ``upto`` from a recorded incident file. ``verify``: each record's chain is checked
    before it is folded, and a broken chain raises ``ChainBroken`` (docs/adr/0050)."""
    chosen = get_reducer(reducer)
    commits = checked_file_commits(path, upto) if verify else read_file(path)
    return chosen.render(fold(commits, chosen, upto, str(path)))


def replay_ledger(
    ledger: EventsourcingLedger,
    workspace_id: str,
    upto: int | None = None,
    reducer: str | None = None,
    *,
    verify: bool = True,
) -> dict[str, Any]:
    chosen = get_reducer(reducer)
    if ledger.head(workspace_id) == 0:
        raise UnknownWorkspace(workspace_id)
    commits = checked_ledger_commits(ledger, workspace_id, upto) if verify else read_ledger(ledger, workspace_id, upto)
    return chosen.render(fold(commits, chosen, upto, f"ledger {workspace_id}"))
