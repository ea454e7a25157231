"""Property tests for every registered reducer (plugins included) over random but well-formed histories.

A history is a drawn sequence of contributions over a small pool of ids and principals, submitted through the
coordinator on the in-memory ledger with a clock the test moves. Many are refused (an unknown reference, a
wrong role, a fenced generation): only the accepted commits matter, and they are what the properties are
about. While a history is drawn, every outcome is checked too: a refusal appends nothing and names a known
reason; an idempotent retry returns the original outcome and appends nothing; a commit takes the next version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caseboard.coordinator import Coordinator
from caseboard.domain.commit import Commit
from caseboard.domain.errors import Reason
from caseboard.projections import Workspaces
from caseboard.reducers import REDUCERS, Reducer, WorkspaceState, get_reducer
from caseboard.replay.compare import facets, state_facets
from tests.unit.board import T0, Board, iso, open_item

NAMES = sorted(REDUCERS)
"""Every registered reducer: each property holds for each (the histories are decided with it current)."""
REASONS = {reason.value for reason in Reason}
OBS = ("o1", "o2", "o3", "o4", "o5")
HYP = ("h1", "h2", "h3")
QUESTIONS = ("q1", "q2", "q3")
PROPOSALS = ("p1", "p2", "p3")
REQUESTS = ("r1", "r2", "r3")
PRINCIPALS = {
    "operator": ("operator-1",),
    "planner": ("planner-1", "planner-2"),
    "specialist": ("specialist-1", "specialist-2"),
    "reporter": ("reporter-1",),
    "verifier": ("verifier-1",),
    "controller": ("controller-1",),
}
ALL_AUTHORS = tuple((role, p) for role, names in PRINCIPALS.items() for p in names)
PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@dataclass(frozen=True)
class Known:
    """What the workspace holds right now, so that most drawn references resolve."""

    observations: tuple[str, ...]
    hypotheses: tuple[str, ...]
    open_questions: tuple[str, ...]
    proposals: tuple[str, ...]
    requests: tuple[str, ...]
    holders: dict[str, tuple[str, int]]  # request id -> (holder, generation)

    @classmethod
    def of(cls, state: WorkspaceState) -> Known:
        return cls(
            tuple(state.observations),
            tuple(state.hypotheses),
            tuple(q.id for q in state.questions.values() if q.answered_version is None),
            tuple(state.proposals),
            tuple(state.work),
            {w.request_id: (w.holder, w.generation) for w in state.work.values() if w.holder is not None},
        )


class Drawer:
    """Cheap draws for one contribution: integers only, mapped onto the pools (strategies built once)."""

    def __init__(self, draw: st.DrawFn, known: Known, version: int) -> None:
        self.draw, self.known, self.version = draw, known, version

    def number(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))

    def one(self, options: tuple[Any, ...] | list[Any]) -> Any:
        return options[self.number(0, len(options) - 1)]

    def ref(self, known: tuple[str, ...], pool: tuple[str, ...]) -> str:
        """Mostly an id the workspace has; sometimes any id of the pool (which may be unknown)."""
        return str(self.one(known) if known and self.number(0, 5) < 5 else self.one(pool))

    def fresh(self, known: tuple[str, ...], pool: tuple[str, ...]) -> str:
        """Mostly an id not used yet; sometimes a reused one (a duplicate_id refusal)."""
        return self.ref(tuple(i for i in pool if i not in known), pool)

    def refs(self, known: tuple[str, ...], pool: tuple[str, ...], most: int) -> list[str]:
        return list(dict.fromkeys(self.ref(known, pool) for _ in range(self.number(0, most))))

    def time(self) -> str:
        return iso(T0 + timedelta(minutes=self.number(0, 60)))

    def observation(self) -> dict[str, Any]:
        k = self.known
        body: dict[str, Any] = {
            "id": self.fresh(k.observations, OBS),
            "statement": self.one(("errors rose", "cert rotated")),
            "source": {"system": "logs", "instance": self.one(("a-1", "a-2"))},
            "event_time": self.time(),
            "event_time_quality": self.one(("verified", "unverified")),
        }
        if self.number(0, 1):
            body["expires_at"] = self.time()
        if k.observations and self.number(0, 3) == 3:
            body["derived_from"] = [self.ref(k.observations, OBS)]
        return body

    def item(self, kind: str) -> dict[str, Any]:
        """One item of the given kind, its references drawn mostly from what the workspace holds."""
        k, holders = self.known, tuple(self.known.holders)
        match kind:
            case "observation":
                return {"type": "observation", **self.observation()}
            case "hypothesis":
                return {
                    "type": "hypothesis",
                    "id": self.fresh(k.hypotheses, HYP),
                    "statement": "a cause",
                    "supporting_evidence": self.refs(k.observations, OBS, 2),
                    "challenging_evidence": self.refs(k.observations, OBS, 1),
                }
            case "link":
                return {
                    "type": "link",
                    "observation": self.ref(k.observations, OBS),
                    "hypothesis": self.ref(k.hypotheses, HYP),
                    "relation": self.one(("supports", "supports", "challenges")),
                }
            case "question":
                about = {"about": self.ref(k.hypotheses, HYP)} if self.number(0, 1) else {}
                return {
                    "type": "question",
                    "id": self.fresh(k.open_questions, QUESTIONS),
                    "text": "why?",
                    **about,
                }
            case "answer":
                return {
                    "type": "answer",
                    "question": self.ref(k.open_questions, QUESTIONS),
                    "text": "because",
                    "evidence": self.refs(k.observations, OBS, 1),
                }
            case "proposal":
                return {
                    "type": "proposal",
                    "id": self.fresh(k.proposals, PROPOSALS),
                    "summary": "roll back",
                    "based_on_workspace_version": self.number(max(1, self.version - 4), self.version),
                    "depends_on": self.refs(k.hypotheses + k.observations, HYP + OBS, 2),
                }
            case "review":
                return {
                    "type": "review",
                    "proposal": self.ref(k.proposals, PROPOSALS),
                    "decision": self.one(("retained", "retained", "revised", "withdrawn", "accepted")),
                    **(
                        {"based_on_workspace_version": self.number(max(1, self.version - 3), self.version)}
                        if self.number(0, 2)
                        else {}
                    ),
                }
            case "work_request":
                return {
                    "type": "work_request",
                    "request_id": self.fresh(k.requests, REQUESTS),
                    "kind": "q",
                    "target": "t",
                }
            case "work_claim":
                return {
                    "type": "work_claim",
                    "request_id": self.ref(k.requests, REQUESTS),
                    "lease_s": self.one((30, 120, 600)),
                }
            case "work_renew":
                return {
                    "type": "work_renew",
                    "request_id": self.ref(holders, REQUESTS),
                    "generation": self.number(1, 3),
                    "lease_s": 120,
                }
            case "work_result":
                found: dict[str, Any] = {"observation": self.observation()} if self.number(0, 1) else {}
                if self.number(0, 1):
                    span = ["2026-03-02T13:00:00Z", "2026-03-02T14:00:00Z"]
                    found["query"] = {"time_range": span, "targets": ["a", "b"], "completed": bool(self.number(0, 1))}
                return {
                    "type": "work_result",
                    "request_id": self.ref(holders, REQUESTS),
                    "generation": self.number(1, 3),
                    "status": self.one(("completed", "completed", "failed")),
                    "summary": "done",
                    **found,
                }
            case "work_reclaim":
                return {"type": "work_reclaim", "request_id": self.ref(holders, REQUESTS), "reason": "quiet"}
            case "verification":
                return {
                    "type": "verification",
                    "claim": self.ref(k.hypotheses, HYP),
                    "check": self.ref(k.requests, REQUESTS),
                    "result": self.one(("confirmed", "refuted", "inconclusive")),
                }
            case "selection":
                pool = k.observations + k.hypotheses
                return {
                    "type": "selection",
                    "select": self.refs(pool, OBS + HYP, 2),
                    "deselect": self.refs(pool, OBS + HYP, 2),
                    "reason": "focus",
                }
            case "cycle":
                return {"type": "cycle", "number": self.number(1, 3)}
            case "status":
                to = self.one(
                    (
                        "evidence_incomplete",
                        "budget_exhausted",
                        "human_review_required",
                        "supported_conclusion",
                        "closed",
                        "investigating",
                    )
                )
                return {"type": "status", "to": to, "reason": "r"}
            case "reopen":
                return {
                    "type": "reopen",
                    "owner": "operator-1",
                    "runtime_limits": {"max_investigation_cycles": self.number(1, 4)},
                }
            case "constraints":
                return {"type": "constraints", "goal": "a narrower goal"}
        raise AssertionError(kind)


NATURAL = {
    "observation": ("specialist",),
    "hypothesis": ("planner",),
    "link": ("planner", "specialist"),
    "question": ("planner", "specialist"),
    "answer": ("planner",),
    "proposal": ("planner",),
    "review": ("planner", "planner", "operator"),
    "work_request": ("planner", "controller"),
    "work_claim": ("specialist", "verifier"),
    "work_renew": ("specialist", "verifier"),
    "work_result": ("specialist", "verifier"),
    "work_reclaim": ("controller",),
    "verification": ("verifier",),
    "selection": ("controller",),
    "cycle": ("controller",),
    "status": ("controller", "operator"),
    "reopen": ("operator",),
    "constraints": ("operator",),
}
WEIGHTED_KINDS = (
    *["observation"] * 4,
    *["hypothesis"] * 4,
    *["link"] * 4,
    "question",
    "answer",
    *["proposal"] * 3,
    *["review"] * 2,
    *["work_request"] * 2,
    *["work_claim"] * 2,
    "work_renew",
    *["work_result"] * 2,
    "work_reclaim",
    "verification",
    "selection",
    "cycle",
    "status",
    "reopen",
    "constraints",
)


@dataclass
class History:
    board: Board
    commits: list[Commit]
    cached: dict[int, dict[str, Any]]


@st.composite
def histories(draw: st.DrawFn, name: str | None = None) -> History:
    """Draw each contribution against the workspace as it stands, submit it with reducer ``name`` current
    (the current one by default), and record the coordinator's cached projection after each commit."""
    reducer = get_reducer(name)
    board = Board()
    board.coordinator = Coordinator(
        board.ledger, Workspaces(board.ledger, reducer, snapshot_min=3), clock=board.clock, trust_timestamps=False
    )
    workspaces = board.coordinator.workspaces
    board.ok(
        "operator",
        [
            open_item(
                max_selected_items=4,
                max_open_questions=2,
                max_proposals=3,
                max_pending_work=2,
                max_investigation_cycles=2,
            )
        ],
    )
    cached = {1: reducer.render(workspaces.current(board.workspace_id))}
    accepted: dict[int, dict[str, Any]] = {}
    for _ in range(draw(st.integers(8, 40), label="contributions")):
        state = workspaces.current(board.workspace_id)
        known = Known.of(state)
        pick = Drawer(draw, known, state.version)
        kinds = [pick.one(WEIGHTED_KINDS)]
        if pick.number(0, 9) == 9:  # now and then anyone at all (simple draws stay well-formed)
            role, principal = pick.one(ALL_AUTHORS)
        else:
            role = pick.one(NATURAL[kinds[0]])
            principal = pick.one(PRINCIPALS[role])
        if pick.number(0, 3) == 3:
            kinds.append(pick.one([k for k in WEIGHTED_KINDS if role in NATURAL[k]] or kinds))
        items = [pick.item(kind) for kind in kinds]
        holder = known.holders.get(items[0].get("request_id", ""))
        if kinds[0] in ("work_renew", "work_result") and holder and pick.number(0, 3) < 3:
            role, principal = holder[0].split("-")[0], holder[0]  # mostly the live holder, at its generation
            items[0]["generation"] = holder[1]
        if kinds[0] == "review" and role in ("planner", "operator"):
            role = "operator" if items[0]["decision"] == "accepted" else "planner"
            principal = PRINCIPALS[role][0]
        board.clock.advance(pick.one((0, 0, 10, 45, 200)))
        extra: dict[str, Any] = {}
        expected = pick.one(("none", "none", "none", "current", "current", "stale"))
        if expected == "current" or (kinds[0] == "review" and items[0]["decision"] == "accepted"):
            extra["expected_version"] = board.head
        elif expected == "stale" and board.head > 1:
            extra["expected_version"] = board.head - 1
        key = pick.one((None, None, None, None, "k1", "k2"))
        if key is not None:
            extra["idempotency_key"] = key
        head = board.head
        outcome = board.submit(role, items, principal, **extra)
        if not outcome["ok"]:  # a refusal appends nothing and says why, in a known word
            assert board.head == head, outcome
            assert outcome["reason"] in REASONS and outcome["message"], outcome
        elif outcome.get("idempotent_replay"):  # a retry gets the original outcome back, nothing appended
            assert board.head == head
            assert {**outcome, "idempotent_replay": None} == {
                **accepted[outcome["workspace_version"]],
                "idempotent_replay": None,
            }
        else:
            assert outcome["workspace_version"] == board.head == head + 1
            accepted[board.head] = outcome
            cached[board.head] = reducer.render(workspaces.current(board.workspace_id))
    commits = board.ledger.read(board.workspace_id)
    assert [c.version for c in commits] == list(range(1, len(commits) + 1))
    return History(board, commits, cached)


def fold(reducer: Reducer[WorkspaceState], commits: list[Commit], workspace_id: str = "ws-1") -> Any:
    return reducer.fold(reducer.initial(workspace_id), commits)


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(st.data())
def test_folding_in_two_parts_at_any_point_equals_folding_at_once(name: str, drawn: st.DataObject) -> None:
    reducer = get_reducer(name)
    history = drawn.draw(histories(name), label="history")
    at_once = reducer.render(fold(reducer, history.commits))
    for split in range(len(history.commits) + 1):
        first = fold(reducer, history.commits[:split])
        assert reducer.render(reducer.fold(first, history.commits[split:])) == at_once, f"split at {split}"


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(st.data(), st.data())
def test_folding_the_rest_on_a_fork_leaves_the_first_part_untouched(
    name: str, drawn: st.DataObject, data: st.DataObject
) -> None:
    reducer = get_reducer(name)
    history = drawn.draw(histories(name), label="history")
    split = data.draw(st.integers(0, len(history.commits)), label="split")
    first = fold(reducer, history.commits[:split])
    before = reducer.render(first)
    rest = reducer.fold(first.fork(), history.commits[split:])
    assert reducer.render(rest) == reducer.render(fold(reducer, history.commits))
    assert reducer.render(first) == before


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(st.data())
def test_the_cached_projection_equals_a_fresh_fold_at_every_version(name: str, drawn: st.DataObject) -> None:
    reducer = get_reducer(name)
    history = drawn.draw(histories(name), label="history")
    fresh = Workspaces(history.board.ledger, reducer)
    assert sorted(history.cached) == [c.version for c in history.commits]
    for version, cached in history.cached.items():
        assert fresh.show("ws-1", version) == cached, f"version {version}"
        assert reducer.render(fold(reducer, history.commits[:version])) == cached, f"version {version}"
    assert reducer.render(history.board.coordinator.workspaces.current("ws-1")) == history.cached[len(history.commits)]


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(st.data())
def test_what_compare_reads_from_a_state_is_what_its_projection_shows(name: str, drawn: st.DataObject) -> None:
    # compare reads each version's facets from the state (state_facets); they are the rendered projection's.
    history = drawn.draw(histories(name), label="history")
    for other in NAMES:
        reducer = get_reducer(other)
        state = None
        for commit in history.commits:
            state = reducer.evolve(state or reducer.initial(commit.workspace_id), commit)
            shown = facets(reducer.render(state))
            assert state_facets(reducer, state) == shown, f"{other} at version {commit.version}"


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(st.data())
def test_every_commit_survives_a_json_round_trip(name: str, drawn: st.DataObject) -> None:
    history = drawn.draw(histories(name), label="history")
    for commit in history.commits:
        assert Commit.model_validate_json(commit.model_dump_json(exclude_none=True)) == commit
        assert Commit.model_validate(json.loads(commit.model_dump_json())) == commit


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(st.data())
def test_the_snapshot_codec_round_trips_at_every_version(name: str, drawn: st.DataObject) -> None:
    reducer = get_reducer(name)
    history = drawn.draw(histories(name), label="history")
    state = reducer.initial("ws-1")
    for commit in history.commits:
        state = reducer.evolve(state, commit)
        restored = reducer.load(json.loads(json.dumps(reducer.dump(state))))
        assert reducer.render(restored) == reducer.render(state), f"version {commit.version}"
        assert reducer.dump(restored) == reducer.dump(state)


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(st.data())
def test_a_state_restored_from_a_snapshot_folds_on_like_the_original(name: str, drawn: st.DataObject) -> None:
    reducer = get_reducer(name)
    history = drawn.draw(histories(name), label="history")
    at_once = reducer.render(fold(reducer, history.commits))
    for split in range(1, len(history.commits) + 1):
        snapshot = json.loads(json.dumps(reducer.dump(fold(reducer, history.commits[:split]))))
        assert reducer.render(reducer.fold(reducer.load(snapshot), history.commits[split:])) == at_once


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(st.data())
def test_the_hash_chain_links_every_commit_to_the_one_before(name: str, drawn: st.DataObject) -> None:
    history = drawn.draw(histories(name), label="history")
    previous: Commit | None = None
    for commit in history.commits:
        assert commit.hash == commit.content_hash()
        assert commit.previous_hash == (previous.hash if previous else None)
        previous = commit


def test_a_sealed_commit_is_stored_as_its_own_json_and_its_hash_covers_that_json_without_the_hash() -> None:
    import hashlib

    from caseboard.coordinator import Coordinator
    from caseboard.ledger import open_ledger
    from tests.conftest import play, scenario_lines

    ledger = open_ledger("memory://")
    play(Coordinator(ledger, trust_timestamps=True), scenario_lines())
    for commit in ledger.read("incident-042"):
        stored = commit.stored_json
        assert stored == commit.model_dump_json(exclude_none=True).encode()
        suffix = b',"hash":"' + str(commit.hash).encode() + b'"}'
        assert stored.endswith(suffix)
        assert hashlib.sha256(stored[: -len(suffix)] + b"}").hexdigest() == commit.hash
        moved = commit.model_copy(update={"version": commit.version + 1})
        assert b'"version":%d' % (commit.version + 1) in moved.stored_json
