"""The coordinator: validates contributions by role and rule, and commits them with a compare-and-set."""

from caseboard.coordinator.parse import parse_contribution
from caseboard.coordinator.service import Coordinator

__all__ = ["Coordinator", "parse_contribution"]
