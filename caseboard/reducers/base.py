"""What every reducer version offers: a pure fold of commits into a state, and everything the other layers may
ask of it. Nothing outside ``caseboard/reducers/`` reaches into a reducer package: the coordinator, routing
and the model view call these (docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Generic, TypeVar

from caseboard.domain.commit import Commit, Decision
from caseboard.domain.items import KNOWLEDGE_ITEMS, Item, Selection

S = TypeVar("S")

LOAD_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError)
"""What a reducer's ``load`` raises for snapshot data it cannot read (a snapshot is then not used)."""
R = TypeVar("R")


@dataclass(frozen=True)
class Cause:
    """One reason a proposal requires revalidation: the ``version`` that committed a ``material`` change on
    ``reference`` (a dependency or evidence under one), a ``constraints`` change, or an observation recorded
    at ``version`` that is ``expired`` (since ``expired_at``)."""

    version: int
    reference: str
    kind: str
    expired_at: datetime | None = None


@dataclass(frozen=True)
class Finding:
    """What ``Reducer.verified_finding`` judged of a finding: its ``kind`` (``hypothesis``, ``observation``,
    ``unknown``), its ``status`` (``confirmed`` or ``verified`` when it may be promoted), the version and
    principal of the verification behind it, the observations it rests on and, for an observation, the
    hypothesis whose verification cites it."""

    id: str
    kind: str
    status: str
    verified_version: int | None
    verified_by: str | None
    evidence: tuple[str, ...]
    via_hypothesis: str | None = None

    @property
    def promotable(self) -> bool:
        return self.verified_version is not None


@dataclass(frozen=True)
class Reducer(Generic[S]):
    """A reducer: its rules (the fields) and what is derived from them (the methods). ``evolve`` takes ownership
    of the state it is given (fork it to keep it).

    Everything shown is derived from the fields of the reducer it is shown by, never from a released package's
    own functions: ``render`` builds the projection with ``projection(state, self)``, whose statuses are
    ``self.proposal_status`` and ``self.hypothesis_status`` and whose ``reducer_version`` is ``self.name``; the
    coordinator's draft, routing, the model view, ``compare``, ``explain`` and ``replay`` call the fields too. So
    ``dataclasses.replace(reducer, name=..., proposal_status=...)`` is a reducer whose every output shows its own
    proposal statuses under its own name (docs/reducers.md, ADR 0170). A rule is one field: a released rule
    built on another of its package's (v3's ``proposal_status`` on its own closure) keeps that one.

    - ``projection(state, reducer)`` builds the projection document (DESIGN.md §4) of ``state`` with the rules
      and the name of ``reducer``; call ``render(state)``, which passes this reducer;
    - ``apply_item(state, commit, item, decision)`` folds one item, for the coordinator's draft of a
      contribution whose later items refer to earlier ones;
    - ``proposal_status(state, proposal, as_of)`` and ``hypothesis_status(state, hypothesis)`` are the
      statuses the projection shows, for a proposal or hypothesis record of the state;
    - ``review_gaps(state, proposal, version)`` lists the versions after ``version`` that committed a
      material change touching what the proposal rests on: what a review made against ``version`` did not see;
    - ``rests_on(state, proposal)`` lists the references a proposal rests on, as this reducer judges it: an
      observation among them that has expired makes the proposal require revalidation (freshness at use);
    - ``idempotency_slot(principal, key)`` is where the state keeps a principal's idempotency key;
    - ``selected_now(state)`` lists what is selected now, in no particular order, at a cost that follows the
      size of the selection rather than the history of the workspace;
    - ``revalidation_causes(state, proposal, as_of)`` (a method, built from the queries above) names why a
      proposal requires revalidation: each material change since the version it was last checked against,
      with the dependency it touched, and each expired observation it rests on.
    """

    name: str
    initial: Callable[[str], S]
    evolve: Callable[[S, Commit], S]
    projection: Callable[[S, Reducer[S]], dict[str, Any]]
    dump: Callable[[S], dict[str, Any]]
    load: Callable[[dict[str, Any]], S]
    apply_item: Callable[[S, Commit, Item, Decision], None]
    proposal_status: Callable[[S, Any, datetime | None], str]
    hypothesis_status: Callable[[S, Any], str]
    review_gaps: Callable[[S, Any, int], list[int]]
    rests_on: Callable[[S, Any], list[str]]
    idempotency_slot: Callable[[str, str], str]
    selected_now: Callable[[S], list[str]]
    late_bearings: Callable[[S, Any, str | None], list[tuple[str, str, str]]] | None = None
    """What a late observation bears on among the closed conclusions (rule 2, ADR 0165); None: nothing, as for
    the released reducers, which do not flag late counterevidence."""
    folds_held: bool = False
    """Whether ``apply_item`` folds an item the coordinator held for lack of capacity (its decision has ``held``,
    ADR 0168) itself: workspace-rules-v4 does; the registry hands any other reducer such an item as what was
    decided of it, its escalation alone (``blind_to_knowledge``)."""

    def render(self, state: S) -> dict[str, Any]:
        """The projection of ``state`` as this reducer shows it: its statuses, under its name."""
        return self.projection(state, self)

    def verified_finding(self, state: S, finding: str) -> Finding:
        """Whether ``finding`` (an id of ``state``) may be promoted, as this reducer judges it: a hypothesis
        whose status is ``confirmed`` (a verification settled it), or an observation with a verified event
        time that supports a hypothesis so confirmed. Reads the records every released state keeps
        (``hypotheses``, ``observations``) and ``hypothesis_status``; changes nothing."""
        hypotheses: Any = getattr(state, "hypotheses", {})
        observations: Any = getattr(state, "observations", {})
        hyp = hypotheses.get(finding)
        if hyp is not None:
            status = self.hypothesis_status(state, hyp)
            if status != "confirmed":
                return Finding(finding, "hypothesis", status, None, None, ())
            return Finding(finding, "hypothesis", status, hyp.verified_version, hyp.verified_by, tuple(hyp.supporting))
        obs = observations.get(finding)
        if obs is None:
            return Finding(finding, "unknown", "unknown", None, None, ())
        if obs.event_time_quality != "verified":
            return Finding(finding, "observation", "unverified_event_time", None, None, ())
        confirmed = [
            h
            for h in hypotheses.values()
            if finding in h.supporting and self.hypothesis_status(state, h) == "confirmed"
        ]
        if not confirmed:
            return Finding(finding, "observation", "not_cited_by_a_verification", None, None, ())
        first = min(confirmed, key=lambda h: (h.verified_version or 0, h.id))
        return Finding(
            finding, "observation", "verified", first.verified_version, first.verified_by, (finding,), first.id
        )

    def check_runner(self, state: S, request_id: str) -> str | None:
        """Who ran the check ``request_id``: the author of its result (the coordinator's rule that a verification
        is independent, issue 33). A state that keeps ``check_runners`` (workspace-rules-v4) knows it for every
        result; a released state knows it only for a result that carried an observation (recorded as its
        holder's, ``via_request``). None when the check has no result, or none this state can attribute."""
        runners: Any = getattr(state, "check_runners", None)
        if runners is not None:
            return runners.get(request_id)  # type: ignore[no-any-return]
        observations: Any = getattr(state, "observations", {})
        return next((obs.author for obs in observations.values() if obs.via_request == request_id), None)

    def copied_from(self, state: S, excerpt: Mapping[str, Any]) -> str | None:
        """The observation whose cited excerpt ``excerpt`` (as the coordinator records it) copies: the same
        excerpt hash, or an overlapping range of the same artifact (issue 33, rule 6; ADR 0166). A state that
        keeps copies (workspace-rules-v4) knows it; a released state counts every observation as a source."""
        find: Any = getattr(state, "copied_from", None)
        return find(excerpt) if find is not None else None

    def has_copies(self, state: S) -> bool:
        """Whether any observation of ``state`` is a copy of another (``copy_group``): when none is, every
        group is the observation alone. False for a released state."""
        return bool(getattr(state, "copy_of", None))

    def copy_group(self, state: S, ref: str) -> tuple[str, ...]:
        """The observations that are one source with ``ref`` (its source first, then its copies): they count
        once toward ``max_selected_items``. ``(ref,)`` for a released state."""
        group: Any = getattr(state, "copy_group", None)
        return group(ref) if group is not None else (ref,)

    def bears_on(self, state: S, body: Any, request_id: str | None = None) -> list[tuple[str, str, str]]:
        """The closed conclusions (confirmed hypotheses, accepted plans) the observation ``body`` (the result of
        ``request_id``, if any), arriving after the workspace closed, bears on, each as ``(ref, kind, why)``
        (issue 33, rule 2; ADR 0165). Empty for a reducer that does not flag late counterevidence."""
        return [] if self.late_bearings is None else self.late_bearings(state, body, request_id)

    def late_counterevidence(self, state: S) -> list[Any]:
        """The late arrivals a state keeps as bearing on a closed conclusion, one record per observation and
        conclusion (``observation``, ``bears_on``, ``kind``, ``why``, ``version``), in the order they were found;
        empty for a released state."""
        return list(getattr(state, "late_counter", {}).values())

    def claims_held(self, state: S) -> bool:
        """Whether a request of ``state`` is claimed under a lease (live or lapsed, not yet reclaimed): the
        controller's sweep watches the workspace until no claim is held (``ConsumerHost._decide``)."""
        work: Any = getattr(state, "work", {})
        return any(rec.status == "claimed" and rec.lease_expires_at is not None for rec in work.values())

    def stopped(self, state: S) -> bool:
        """Whether work is stopped: the budget was exhausted and no reopen came since (issue 33, rule 10),
        whatever status was set in between. A state that keeps ``exhausted_at`` (workspace-rules-v4) remembers
        it across status changes; a released state knows only its current status."""
        exhausted: Any = getattr(state, "exhausted_at", False)
        if exhausted is not False:
            return exhausted is not None
        return getattr(state, "status", None) == "budget_exhausted"

    def revalidation_causes(self, state: S, proposal: Any, as_of: datetime | None) -> list[Cause]:
        """Why ``proposal`` requires revalidation in ``state``, as this reducer judges it: the material changes
        ``review_gaps`` finds since ``proposal.checked_at``, each with the reference of ``rests_on`` it marked
        (``constraints`` for a change of constraints), then the observations of ``rests_on`` expired at
        ``as_of``. Empty when nothing does. Reads the marks every released state keeps (``material``,
        ``constraints_version``, ``observations``); derives nothing the statuses do not already use."""
        versions = set(self.review_gaps(state, proposal, proposal.checked_at))
        refs = self.rests_on(state, proposal)
        material: Any = getattr(state, "material", {})
        causes = [
            Cause(material[ref], ref, "material")
            for ref in dict.fromkeys(refs)
            if material.get(ref, 0) in versions and material.get(ref, 0) > proposal.checked_at
        ]
        constraints = getattr(state, "constraints_version", 0)
        if constraints in versions and constraints > proposal.checked_at:
            causes.append(Cause(constraints, "constraints", "constraints"))
        observations: Any = getattr(state, "observations", {})
        for ref in dict.fromkeys(refs):
            obs = observations.get(ref)
            expires = getattr(obs, "expires_at", None)
            if expires is not None and as_of is not None and expires <= as_of:
                causes.append(Cause(getattr(obs, "version", 0), ref, "expired", expires))
        return sorted(causes, key=lambda cause: (cause.version, cause.reference))

    def fold(self, state: S, commits: Iterable[Commit]) -> S:
        for commit in commits:
            state = self.evolve(state, commit)
        return state


def shared_key(principal: str, key: str) -> str:
    """Reducers up to workspace-rules-v2 keep one idempotency key per workspace, whoever used it."""
    return key


HELD_AS = Selection(type="selection", reason="held for lack of capacity")
"""What a reducer that does not fold held items is given in place of one: an item that changes nothing itself,
so that only the decision recorded with it (its escalation) is applied, as every reducer applies decisions."""


def held_as_decided(item: Item, decision: Decision) -> tuple[Item, Decision]:
    """An item the coordinator held for lack of capacity (ADR 0168), as a reducer that does not know holds folds
    it: nothing of the item (it was not recorded as a question, check or proposal), its escalation as decided."""
    if "held" not in decision:
        return item, decision
    escalation = decision.get("escalated")
    return HELD_AS, ({"escalated": escalation} if escalation else {})


def blind_to_knowledge(reducer: Reducer[S]) -> Reducer[S]:
    """``reducer`` as the other layers get it from the registry: knowledge items (``promote``, ``retire``) are
    left out of its folds. No released reducer knows them (workspace-rules-v1 ends its match with
    ``assert_never``), the projection has nothing to show of them and the knowledge store is written from the
    ledger (docs/adr/0120). A commit without them is folded as it always was. An item the coordinator held for
    lack of capacity (its decision has ``held``, ADR 0168) reaches a reducer that does not fold holds itself
    (``Reducer.folds_held``) as what was decided of it: its escalation, nothing of the item."""
    evolve, apply_item = reducer.evolve, reducer.apply_item
    if not reducer.folds_held:
        evolve, apply_item = _blind_to_holds(evolve, apply_item)

    def evolve_known(state: S, commit: Commit) -> S:
        if any(item.type in KNOWLEDGE_ITEMS for item in commit.items):
            kept = [
                (i, d) for i, d in zip(commit.items, commit.decisions, strict=True) if i.type not in KNOWLEDGE_ITEMS
            ]
            commit = commit.model_copy(
                update={"items": tuple(i for i, _ in kept), "decisions": tuple(d for _, d in kept)}
            )
        return evolve(state, commit)

    def apply_known(state: S, commit: Commit, item: Item, decision: Decision) -> None:
        if item.type not in KNOWLEDGE_ITEMS:
            apply_item(state, commit, item, decision)

    return replace(reducer, evolve=evolve_known, apply_item=apply_known)


def _blind_to_holds(
    evolve: Callable[[S, Commit], S], apply_item: Callable[[S, Commit, Item, Decision], None]
) -> tuple[Callable[[S, Commit], S], Callable[[S, Commit, Item, Decision], None]]:
    """``evolve`` and ``apply_item`` of a reducer that does not fold held items, handed them as decided."""

    def evolve_decided(state: S, commit: Commit) -> S:
        if any("held" in decision for decision in commit.decisions):
            pairs = [held_as_decided(i, d) for i, d in zip(commit.items, commit.decisions, strict=True)]
            commit = commit.model_copy(
                update={"items": tuple(i for i, _ in pairs), "decisions": tuple(d for _, d in pairs)}
            )
        return evolve(state, commit)

    def apply_decided(state: S, commit: Commit, item: Item, decision: Decision) -> None:
        apply_item(state, commit, *held_as_decided(item, decision))

    return evolve_decided, apply_decided
