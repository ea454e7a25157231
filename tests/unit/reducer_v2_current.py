"""A pytest plugin (``-p tests.unit.reducer_v2_current``): ``workspace-rules-v2`` is the current reducer for the
whole run, set when pytest is configured (before any test module is imported), and the tests of what only v3
does are left out (their v2 counterparts are in tests/unit/test_suites_under_v2.py). Used by that test, never
on its own by CI."""

from __future__ import annotations

import pytest

import caseboard.reducers

V2 = "workspace-rules-v2"

V3_ONLY = {
    # idempotency keys per principal (ADR 0037): v2 keeps one key per workspace
    "tests/unit/test_rules.py::test_an_idempotency_key_belongs_to_the_principal_that_used_it",
    # a review is a decision on a version (ADR 0036): v2 makes a retained proposal current where it lands
    "tests/unit/test_rules.py::test_a_retained_review_makes_a_proposal_current_again_and_keeps_its_basis",
    "tests/unit/test_view_reviews_and_checks.py::"
    "test_each_review_is_shown_with_the_version_it_was_made_against_and_the_changes_it_did_not_cover",
    # a proposal's closure through the proposals it depends on, and a summary's sources (v3)
    "tests/unit/test_rules.py::test_a_proposal_built_on_another_requires_revalidation_when_the_one_underneath_does",
    "tests/unit/test_view_freshness.py::"
    "test_a_summary_rests_on_its_sources_so_a_proposal_over_a_summary_of_expired_evidence_is_flagged",
    # v2's freshness follows the supporting path only: an expired challenge does not flag the plan
    "tests/unit/test_view_freshness.py::"
    "test_a_challenge_that_expires_flags_the_proposal_resting_on_the_challenged_hypothesis",
    # incomplete checks and unsupported answers (v3)
    "tests/unit/test_rules.py::test_a_result_whose_query_did_not_complete_is_not_shown_as_clean",
    "tests/unit/test_view_reviews_and_checks.py::test_an_incomplete_check_is_shown_with_its_coverage_in_the_reserved_part",
    "tests/unit/test_view_reviews_and_checks.py::test_an_open_question_is_shown_with_its_unsupported_answer_beside_it",
    "tests/unit/test_view_reviews_and_checks.py::"
    "test_a_completed_query_without_an_observation_reads_as_no_findings_within_its_coverage",
    "tests/unit/test_view_reviews_and_checks.py::test_the_controller_requests_what_an_incomplete_check_did_not_cover",
    "tests/unit/test_view_reviews_and_checks.py::"
    "test_a_workspace_whose_checks_are_incomplete_when_the_cycles_run_out_ends_evidence_incomplete",
    "tests/unit/test_view_reviews_and_checks.py::test_a_completed_rest_leaves_no_coverage_missing",
    # what the coordinator learns from a v4 state (ADR 0135): who ran a check with no observation in its
    # result, and that the budget was exhausted once the status moved on
    "tests/unit/test_rules.py::test_a_check_run_by_the_claims_author_or_its_sources_cannot_verify_it",
    "tests/unit/test_rules.py::test_a_check_run_by_the_source_of_a_summary_under_the_claim_cannot_verify_it",
    "tests/unit/test_rules.py::test_after_the_budget_is_exhausted_nothing_is_claimed_or_requested_until_a_reopen",
    # an empty result proves nothing without its coverage (v4, ADR 0132)
    "tests/unit/test_view_reviews_and_checks.py::"
    "test_a_verification_and_an_answer_on_a_check_without_coverage_are_shown_as_coverage_insufficient",
}


def pytest_configure(config: pytest.Config) -> None:
    """Before any test module is imported (a ``-p`` plugin is configured before collection): importing this
    module for ``V3_ONLY`` changes nothing."""
    caseboard.reducers.CURRENT = V2


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--only-v3-tests", action="store_true", help="run only the tests of what v3 alone does")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    only = config.getoption("--only-v3-tests")
    kept = [item for item in items if (item.nodeid.split("[")[0] in V3_ONLY) == only]
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    items[:] = kept
