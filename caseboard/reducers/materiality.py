"""What a review made against a version did not see: the material changes committed after it.

Shared by the reducers whose state marks material changes per reference (``state.material``) and records the
version of the last ``constraints`` item; each reducer passes the references a proposal rests on.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def gaps(state: Any, rests_on: Iterable[str], version: int) -> list[int]:
    """The versions after ``version`` that marked a material change on ``rests_on`` or changed constraints."""
    found = {state.material[ref] for ref in rests_on if state.material.get(ref, 0) > version}
    if state.constraints_version > version:
        found.add(state.constraints_version)
    return sorted(found)
