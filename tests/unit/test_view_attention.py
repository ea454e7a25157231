"""The model-facing view under pressure (issue 22): the reserved sections first and always, each bounded by its
share; what is left out counted per section; the view escalates, naming what it cut, when the reserved material
alone does not fit; derivatives of one source collapse into one entry."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caseboard.domain.items import Role
from caseboard.projections.model_view import MIN_BUDGET, ModelView, build_view
from caseboard.reducers import CURRENT, get_reducer
from tests.unit.board import Board, hyp, link, obs, open_item

ROUTINE = 300


def view_of(board: Board, budget: int, role: Role = Role.PLANNER) -> ModelView:
    state = board.coordinator.workspaces.state_at(board.workspace_id)
    commits = board.ledger.read(board.workspace_id, upto=state.version)
    return build_view(state, commits, role, budget, CURRENT)


def busy_board() -> Board:
    """300 routine observations at max_selected_items 50, then h (supported by o0), o-contra and a question."""
    board = Board("view-1")
    board.open(max_selected_items=50)
    for start in range(0, ROUTINE, 100):
        board.ok("specialist", [obs(f"o{i}", f"routine reading {i}") for i in range(start, start + 100)])
    board.ok("planner", [hyp("h", "the cache tier causes the slowdown", supporting_evidence=["o0"])])
    board.ok(
        "specialist",
        [
            obs("o-contra", "cache hit ratio was normal throughout"),
            link("o-contra", "h", "challenges"),
            {"type": "question", "id": "q-h", "text": "Did the cache tier change before 14:00?", "about": "h"},
        ],
    )
    return board


def test_the_planners_view_of_a_busy_incident_holds_the_hypothesis_its_contradiction_and_the_question() -> None:
    board = busy_board()
    view = view_of(board, 3000)
    refs = {e.ref: e.section for e in view.entries}
    assert refs["h"] == "contradictions" and refs["o-contra"] == "contradictions"
    assert refs["q-h"] == "open_questions"
    assert not view.escalate and view.cut_sections == []
    assert view.omitted["observations"] > 0 and view.used_chars <= 3000
    assert f"omitted for the budget: {view.omitted['observations']} observations" in view.text


def test_a_budget_too_small_for_the_reserved_material_escalates_and_names_the_sections_cut() -> None:
    board = busy_board()
    for n in range(8):
        board.ok("specialist", [obs(f"c{n}", "x" * 200), link(f"c{n}", "h", "challenges")])
    view = view_of(board, MIN_BUDGET)
    assert view.escalate and view.reserved_omitted > 0
    assert "contradictions" in view.cut_sections
    assert "escalate (human_review_required)" in view.text and "cut: contradictions" in view.text


def test_one_reserved_section_cannot_starve_the_others() -> None:
    board = busy_board()
    for n in range(12):
        board.ok("specialist", [obs(f"c{n}", "y" * 200), link(f"c{n}", "h", "challenges")])
    view = view_of(board, 4000)
    sections = [e.section for e in view.entries]
    assert "contradictions" in view.cut_sections  # the twelve challenges alone would fill the budget
    assert "open_questions" in sections and "q-h" in {e.ref for e in view.entries}


def test_contradictions_of_a_hypothesis_the_selection_left_out_are_shown_with_it() -> None:
    board = Board("view-2")
    board.open(max_selected_items=1)
    board.ok("specialist", [obs("o1")])
    board.ok("planner", [hyp("h", supporting_evidence=["o1"])])
    board.ok("operator", [{"type": "selection", "select": [], "deselect": ["h"], "reason": "focus"}])
    board.ok("specialist", [obs("o-contra", "not so"), link("o-contra", "h", "challenges")])
    state = board.coordinator.workspaces.state_at("view-2")
    view = view_of(board, 3000)
    assert not state.is_selected("h")
    assert [(e.section, e.ref) for e in view.entries[:2]] == [("contradictions", "h"), ("contradictions", "o-contra")]
    assert "not selected" in view.entries[0].provenance.status


def test_repeated_derivatives_of_one_source_collapse_into_one_entry() -> None:
    board = Board("view-3")
    board.open()
    board.ok("specialist", [obs("o1", "one instance failed auth")])
    board.ok(
        "reporter",
        [
            obs("sum1", "auth failures across the fleet", derived_from=["o1"]),
            obs("sum2", "fleet-wide auth failures since 14:03", derived_from=["o1"]),
        ],
    )
    view = view_of(board, 20000)
    summaries = [e for e in view.entries if e.ref in ("sum1", "sum2")]
    assert len(summaries) == 1
    assert (
        summaries[0].note == f"also derived from the same sources: {'sum2' if summaries[0].ref == 'sum1' else 'sum1'}"
    )
    assert "derived summary of o1 (not a source)" in summaries[0].provenance.status


@st.composite
def workspaces(draw: st.DrawFn) -> tuple[Board, int]:
    board = Board("prop")
    board.open(max_selected_items=draw(st.integers(2, 12)))
    routine = draw(st.integers(0, 30))
    if routine:
        board.ok("specialist", [obs(f"r{i}", "routine " * draw(st.integers(1, 8))) for i in range(routine)])
    hypotheses = draw(st.integers(1, 4))
    for h in range(hypotheses):
        board.ok("planner", [hyp(f"h{h}", "claim " * draw(st.integers(1, 10)))])
    for c in range(draw(st.integers(0, 8))):
        target = draw(st.integers(0, hypotheses - 1))
        text = "against " * draw(st.integers(1, 30))
        board.ok("specialist", [obs(f"c{c}", text), link(f"c{c}", f"h{target}", "challenges")])
    for q in range(draw(st.integers(0, 4))):
        board.ok("specialist", [{"type": "question", "id": f"q{q}", "text": "why? " * draw(st.integers(1, 20))}])
    return board, draw(st.integers(MIN_BUDGET, 12000))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workspaces())
def test_a_challenge_of_a_live_hypothesis_is_never_absent_from_both_selection_and_view_unless_the_view_escalates(
    drawn: tuple[Board, int],
) -> None:
    board, budget = drawn
    state = board.coordinator.workspaces.state_at(board.workspace_id)
    reducer = get_reducer(CURRENT)
    view = view_of(board, budget)
    shown = {e.ref for e in view.entries}
    assert view.used_chars == len(view.text) <= budget
    for hypothesis in state.hypotheses.values():
        if reducer.hypothesis_status(state, hypothesis) == "refuted":
            continue
        for challenge in hypothesis.challenging:
            assert state.is_selected(challenge) or challenge in shown or view.escalate
            if challenge not in shown:
                assert "contradictions" in view.cut_sections


def test_the_smallest_view_never_exceeds_its_budget_even_with_a_long_goal_and_every_section_crowded() -> None:
    board = Board("view-4")
    board.ok("operator", [{**open_item(), "goal": "find the cause " * 250}])
    board.ok("planner", [hyp("h", "w" * 3000), {"type": "work_request", "request_id": "w", "kind": "k", "target": "t"}])
    for n in range(6):
        board.ok("specialist", [obs(f"c{n}", "z" * 3000), link(f"c{n}", "h", "challenges")])
        board.ok("specialist", [{"type": "question", "id": f"q{n}", "text": "why " * 500, "about": "h"}])
    for budget in (MIN_BUDGET, MIN_BUDGET + 1, 1200, 1500):
        view = view_of(board, budget)
        assert view.used_chars == len(view.text) <= budget
        assert view.escalate and view.cut_sections
        assert "escalate (human_review_required)" in view.text.splitlines()[-1]
    assert [e.ref for e in view_of(board, 1500).entries] == ["w"]  # what still fits is shown, reserved first
