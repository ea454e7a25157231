"""Projections: the current view of each workspace, cached and snapshotted, and any past version."""

from caseboard.projections.workspaces import Workspaces

__all__ = ["Workspaces"]
