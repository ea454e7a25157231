"""Oracles that read nothing but the commits: what the properties and the state machine judge reducers by.

``material_versions`` is a subset of what every released reducer counts as a material change touching a
proposal's direct dependencies, so every violation it reports is real.
"""

from __future__ import annotations

from caseboard.domain.commit import Commit


def material_versions(commits: list[Commit], depends_on: tuple[str, ...]) -> list[int]:
    """The versions that challenged, refuted, revised or withdrew a direct dependency, or changed the
    constraints."""
    deps = set(depends_on)
    found: list[int] = []
    for commit in commits:
        for item in commit.items:
            touches = (
                (item.type == "link" and item.relation == "challenges" and item.hypothesis in deps)
                or (item.type == "verification" and item.result == "refuted" and item.claim in deps)
                or (item.type == "review" and item.decision in ("revised", "withdrawn") and item.proposal in deps)
                or item.type == "constraints"
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
