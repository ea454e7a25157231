"""The evaluation's pure parts: the generated corpus, the shared judgment, the single agent, the figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caseboard.cli.evaluate_cmds import parse_budget
from caseboard.domain.errors import ConfigurationError
from caseboard.evaluation.ending import Ending, Plan
from caseboard.evaluation.figures import Pricing, score, totals
from caseboard.evaluation.generate import build, render
from caseboard.evaluation.incident import TRAP_KINDS, CorpusError, EvaluationIncident, load_corpus
from caseboard.evaluation.judgment import Explanation, discounted, outcome_of
from caseboard.evaluation.single_agent import SingleAgent
from caseboard.evaluation.tools import Tools, artifact_id

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus" / "evaluation"
SCENARIOS = json.loads((CORPUS / "scenarios.json").read_text())["scenarios"]


def incident(name: str) -> EvaluationIncident:
    return next(i for i in load_corpus(CORPUS) if i.id == name)


def agent_on(name: str, budget: int = 8, tokens: int | None = None) -> SingleAgent:
    case = incident(name)
    agent = SingleAgent(case, Tools(case), budget, tokens)
    agent.run()
    return agent


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["id"] for s in SCENARIOS])
def test_each_committed_incident_is_what_its_declared_scenario_builds(scenario: dict[str, object]) -> None:
    assert render(build(scenario)) == render(build(dict(scenario)))
    assert (CORPUS / "incidents" / f"{scenario['id']}.json").read_text() == render(build(scenario))


def test_the_corpus_has_twenty_incidents_every_trap_and_both_incomplete_outcomes() -> None:
    incidents = load_corpus(CORPUS)
    assert len(incidents) >= 20
    assert {t.kind for i in incidents for t in i.truth.traps} == set(TRAP_KINDS)
    assert {"supported", "evidence_incomplete", "human_review_required"} <= {i.truth.outcome for i in incidents}
    assert len({i.id for i in incidents}) == len(incidents)


def test_a_missing_or_malformed_corpus_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="no such corpus directory"):
        load_corpus(tmp_path / "absent")
    with pytest.raises(CorpusError, match="no evaluation incidents"):
        load_corpus(tmp_path)
    (tmp_path / "bad.json").write_text('{"format": "caseboard.evaluation/1"}')
    with pytest.raises(CorpusError, match=r"bad\.json: not an evaluation incident"):
        load_corpus(tmp_path)


def test_evidence_with_an_unverified_clock_or_from_another_instance_is_not_weighed() -> None:
    case = incident("eval-011-wrong-instance")
    base = {"id": "o", "event_time_quality": "verified", "source": {"system": "s", "instance": "payments-api-1"}}
    assert discounted(base, case) is None
    assert "unverified" in str(discounted({**base, "event_time_quality": "unverified"}, case))
    assert "outside the incident's scope" in str(
        discounted({**base, "source": {"instance": "payments-api-staging-1"}}, case)
    )


def test_one_confirmed_unchallenged_explanation_is_supported_and_anything_less_is_not() -> None:
    assert outcome_of([Explanation("a", "confirmed", False), Explanation("b", "refuted", True)]) == ("supported", "a")
    assert outcome_of([Explanation("a", "confirmed", True)]) == ("human_review_required", None)
    assert outcome_of([Explanation("a", "confirmed", False), Explanation("b", "confirmed", False)])[0] == (
        "human_review_required"
    )
    assert outcome_of([Explanation("a", "supported", False)]) == ("evidence_incomplete", None)


def test_both_arms_cite_the_same_artifact_for_the_same_raw_lines() -> None:
    case = incident("eval-001-supported")
    finding = case.finding("log_query", 0)
    body = Tools(case).observation(finding)
    assert body is not None
    assert body["evidence_ref"]["artifact"] == artifact_id("".join(f"{line}\n" for line in finding.artifact).encode())


def test_the_single_agent_notes_late_counterevidence_but_hands_over_its_plan_as_drafted() -> None:
    agent = agent_on("eval-004-late-counterevidence")
    assert agent.status == "human_review_required"
    assert agent.held["hyp-certificate-change"].challenges == ["obs-earlier-failures"]
    assert agent.plans["proposal-certificate-change"].status == "current"


def test_the_single_agent_withdraws_a_plan_whose_claim_a_check_refutes() -> None:
    agent = agent_on("eval-007-stale-alternative")
    assert agent.plans["proposal-certificate-change"].status == "withdrawn"
    assert agent.held["hyp-capacity-exhaustion"].status == "confirmed"


def test_the_single_agent_discounts_what_the_shared_judgment_discounts() -> None:
    agent = agent_on("eval-009-unverified-clock")
    assert agent.held["hyp-certificate-change"].challenges == []
    assert any(n.get("discounted") == "obs-skewed-failures" for n in agent.notes)


def test_the_single_agent_asks_once_more_for_an_incomplete_check_then_ends_incomplete() -> None:
    agent = agent_on("eval-018-incomplete-check")
    calls = [c["request_id"] for step in agent.trace for c in step.get("calls", [])]
    assert calls.count("check-hyp-certificate-change-rest") == 1
    assert agent.status == "evidence_incomplete"


def test_the_single_agent_stops_at_its_step_or_token_budget() -> None:
    assert agent_on("eval-001-supported", budget=2).status == "budget_exhausted"
    tight = agent_on("eval-001-supported", tokens=500)
    assert tight.status == "budget_exhausted"
    assert "token budget" in tight.reason


def ending(arm: str, status: str, *, plans: list[Plan] | None = None, tokens: int = 1_000_000) -> Ending:
    return Ending(
        arm=arm,
        incident="eval-004-late-counterevidence",
        status=status,
        reason="",
        explanations=[Explanation("hyp-certificate-change", "confirmed", True)],
        weighed_challenges={"hyp-certificate-change": ["obs-earlier-failures"]},
        plans=plans or [],
        received={},
        flagged=[],
        rechecked=[],
        elapsed_s=600,
        cycles=4,
        tool_calls=3,
        tokens=tokens,
        invocations=4,
        revisions=0,
        withdrawals=0,
        refused=0,
        record="runs/x.jsonl",
    )


def test_a_plan_left_current_on_a_challenged_claim_is_rework_and_a_missed_trap() -> None:
    case = incident("eval-004-late-counterevidence")
    plan = Plan("proposal-certificate-change", "current", ("hyp-certificate-change",))
    row = score(case, ending("single-agent", "human_review_required", plans=[plan]), Pricing())
    assert row["correct"] is True
    assert row["plans_requiring_revalidation"] == ["proposal-certificate-change"]
    assert {t["kind"]: t["caught"] for t in row["traps"]} == {"late_counterevidence": True, "stale_proposal": False}
    assert row["rework"] == {"plans_requiring_revalidation": 1, "traps_missed": 1, "wrong_outcome": 0, "total": 2}
    withdrawn = Plan("proposal-certificate-change", "withdrawn", ("hyp-certificate-change",))
    assert (
        score(case, ending("workspace", "human_review_required", plans=[withdrawn]), Pricing())["rework"]["total"] == 0
    )


def test_unsuccessful_runs_are_counted_in_the_cost_per_supported_outcome() -> None:
    case = incident("eval-004-late-counterevidence")
    good = score(case, ending("workspace", "human_review_required"), Pricing(2.0))
    bad = score(case, ending("workspace", "budget_exhausted"), Pricing(2.0))
    assert (good["cost"], bad["correct"], bad["time_to_supported_outcome_s"]) == (2.0, False, None)
    summed = totals([good, bad])
    assert (summed["cost"], summed["correct"], summed["unsuccessful"]) == (4.0, 1, 1)
    assert summed["cost_per_supported_outcome"] == 4.0


@pytest.mark.parametrize("text", ["cycles", "cycles=0", "turns=3", "tokens=-1", "cycles=2,tokens=x"])
def test_a_malformed_budget_is_refused(text: str) -> None:
    with pytest.raises(ConfigurationError, match="expected cycles=N,tokens=M"):
        parse_budget(text)


def test_a_budget_names_cycles_tokens_or_both() -> None:
    assert parse_budget("cycles=3, tokens=5000") == {"cycles": 3, "tokens": 5000}
    assert parse_budget(None) == {}
