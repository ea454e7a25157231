"""Property (issue 24): no sequence of contributions makes a proposal ``current`` while a material change
touching what it depends on was committed after the version of its last retaining review (or after its basis,
when it was never retained).

The oracle (tests/oracles.py) reads nothing but the commits: which versions challenged, refuted, revised or
withdrew a direct dependency, or changed the constraints, and which version each ``retained`` review was made
against. It is a subset of what the reducer counts as material, so every violation it reports is real.
"""

from __future__ import annotations

from hypothesis import given

from tests.oracles import material_versions, reviewed_against
from tests.unit.test_reducer_properties import PROPERTY_SETTINGS, History, histories


@PROPERTY_SETTINGS
@given(histories())
def test_a_proposal_is_never_current_while_a_change_after_its_last_review_stands(history: History) -> None:
    for version, projection in history.cached.items():
        prefix = history.commits[:version]
        for entry in projection["proposals"]:
            if entry["status"] != "current":
                continue
            against = reviewed_against(prefix, entry["id"], entry["based_on_workspace_version"])
            unseen = [v for v in material_versions(prefix, tuple(entry["depends_on"])) if v > against]
            assert not unseen, f"{entry['id']} is current at {version}, reviewed against {against}; unseen {unseen}"
