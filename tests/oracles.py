"""Oracles that read nothing but the commits: what the properties and the state machine judge reducers by.

``material_versions`` is a subset of what every released reducer counts as a material change touching a
proposal's direct dependencies, so every violation it reports is real.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from caseboard.domain.commit import Commit


def material_versions(commits: list[Commit], depends_on: tuple[str, ...]) -> list[int]:
    """The versions that challenged, refuted (with a verification that settled, rule 1), revised or withdrew a
    direct dependency, or changed the constraints (a restatement is no change, rule 11). A challenge by an
    observation whose event time ran ahead of its commit (rule 8) is left out: it marks no order."""
    deps = set(depends_on)
    found: list[int] = []
    settling = {version for version, _, _ in settled_verifications(commits)}
    changing = constraint_changes(commits)
    future = ahead_of_their_commits(commits)
    for commit in commits:
        for item in commit.items:
            touches = (
                (
                    item.type == "link"
                    and item.relation == "challenges"
                    and item.hypothesis in deps
                    and item.observation not in future
                )
                or (
                    item.type == "verification"
                    and item.result == "refuted"
                    and item.claim in deps
                    and commit.version in settling
                )
                or (item.type == "review" and item.decision in ("revised", "withdrawn") and item.proposal in deps)
                or (item.type == "constraints" and commit.version in changing)
            )
            if touches:
                found.append(commit.version)
    return found


def reviewed_against(commits: list[Commit], proposal_id: str, basis: int) -> int:
    """The version the proposal was last checked against: its basis, or the latest retaining review's."""
    against = basis
    for commit in commits:
        for item in commit.items:
            if item.type == "review" and item.proposal == proposal_id and item.decision == "retained":
                version = item.based_on_workspace_version or commit.expected_version
                assert version is not None, f"a retain without a version landed at {commit.version}"
                against = max(against, version)
    return against


def covers(query: Any, status: str, window: tuple[datetime, datetime] | None) -> bool:
    """Rule 1 of docs/rules-of-evidence.md, from the item alone: a completed result whose query states a time
    range covering ``window``, at least one target, its filters and ``completed: true``."""
    if query is None or status != "completed" or not (query.targets and query.filters and query.completed):
        return False
    return window is None or (query.time_range[0] <= window[0] and query.time_range[1] >= window[1])


def settled_verifications(commits: list[Commit]) -> list[tuple[int, str, str]]:
    """(version, claim, result) of every ``confirmed`` or ``refuted`` verification that settled its claim by
    rule 1: the check it cites covered the event times of the evidence under the hypothesis (else of every
    observation so far) with a complete query naming targets and filters."""
    times: dict[str, datetime] = {}
    evidence: dict[str, list[str]] = {}
    results: dict[str, tuple[Any, str]] = {}
    settled: list[tuple[int, str, str]] = []
    for commit in commits:
        for item in commit.items:
            if item.type == "observation":
                times[item.id] = item.event_time
            elif item.type == "work_result":
                results[item.request_id] = (item.query, item.status)
                if item.observation is not None:
                    times[item.observation.id] = item.observation.event_time
            elif item.type == "hypothesis":
                evidence[item.id] = [*item.supporting_evidence, *item.challenging_evidence]
            elif item.type == "link":
                evidence[item.hypothesis].append(item.observation)
            elif item.type == "verification" and item.result != "inconclusive":
                under = [times[ref] for ref in evidence.get(item.claim, ())] or list(times.values())
                window = (min(under), max(under)) if under else None
                query, status = results.get(item.check, (None, "pending"))
                if covers(query, status, window):
                    settled.append((commit.version, item.claim, item.result))
    return settled


def constraint_changes(commits: list[Commit]) -> set[int]:
    """The versions whose ``constraints`` item changed the goal, the scope or a limit (rule 11 of
    docs/rules-of-evidence.md: one that restates them changes nothing), following ``open`` and ``reopen``."""
    goal: Any = None
    scope: Any = None
    limits: dict[str, Any] = {}
    found: set[int] = set()
    for commit in commits:
        for item in commit.items:
            if item.type == "open":
                goal, scope, limits = item.goal, item.scope, item.runtime_limits.model_dump()
            elif item.type == "reopen":
                limits = {**limits, **item.runtime_limits.model_dump(exclude_none=True)}
            elif item.type == "constraints":
                new = item.runtime_limits.model_dump(exclude_none=True) if item.runtime_limits else {}
                if (
                    (item.goal is not None and item.goal != goal)
                    or (item.scope is not None and item.scope != scope)
                    or any(limits.get(name) != value for name, value in new.items())
                ):
                    found.add(commit.version)
                goal = item.goal if item.goal is not None else goal
                scope = item.scope if item.scope is not None else scope
                limits = {**limits, **new}
    return found


def reopen_limit_changes(commits: list[Commit]) -> set[int]:
    """The versions whose ``reopen`` changed a limit's value: a change of constraints under workspace-rules-v4
    (rule 2 of docs/rules-of-evidence.md, ADR 0165; the released reducers do not count it, so it is kept out of
    ``material_versions``)."""
    limits: dict[str, Any] = {}
    found: set[int] = set()
    for commit in commits:
        for item in commit.items:
            new: dict[str, Any] = {}
            if item.type == "open":
                limits = item.runtime_limits.model_dump()
            elif item.type in ("reopen", "constraints") and item.runtime_limits is not None:
                new = item.runtime_limits.model_dump(exclude_none=True)
            if item.type == "reopen" and any(limits.get(name) != value for name, value in new.items()):
                found.add(commit.version)
            limits = {**limits, **new}
    return found


SKEW_S = 5
"""Rule 8's skew, as docs/rules-of-evidence.md states it."""


def ahead_of_their_commits(commits: list[Commit]) -> set[str]:
    """The observations whose event time is later than the time of the commit recording them by more than the
    skew (rule 8 of docs/rules-of-evidence.md)."""
    found: set[str] = set()
    for commit in commits:
        for item in commit.items:
            body = item if item.type == "observation" else getattr(item, "observation", None)
            known = body is not None and item.type in ("observation", "work_result")
            if known and (body.event_time - commit.at).total_seconds() > SKEW_S:
                found.add(body.id)
    return found
