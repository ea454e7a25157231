"""The selection policy: what stays in front of the participants when ``max_selected_items`` is reached.

Capacity limits active material; it never erases inconvenient evidence (docs/attention.md). Ranks, highest
first:

1. live hypotheses (any status but ``refuted``) and
2. evidence that challenges a live hypothesis: these two always stay; a policy never deselects them;
3. evidence a proposal rests on (its dependencies, and the evidence supporting a hypothesis among them);
4. other observations that something refers to (support, an answer, a selected summary), most referenced
   first;
5. the rest, most recent first.

When an item must be selected and the selection is full, the lowest-ranked selected observation is deselected
and the decision says why; an item of ranks 1-2 that finds nothing below it to displace escalates the
workspace to ``human_review_required`` instead. Derived summaries do not count against the limit, and
observations that cite the same excerpt (copies of one source, as the reducer judges them:
``Reducer.copy_group``, ADR 0166) count once: a copy takes room only when no other copy is selected, and the
policy displaces a group of copies whole, or not at all. These are
the coordinator's recorded decisions: reducers apply them as recorded, so old ledgers replay unchanged.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from caseboard.reducers import Reducer, WorkspaceState

ESCALATION = "human_review_required"
TIERS = ("unreferenced", "referenced", "a proposal rests on it")


class Room:
    """The selection decisions of one item, against the state and what this item has chosen already."""

    def __init__(self, state: WorkspaceState, reducer: Reducer[WorkspaceState], *, keep: tuple[str, ...] = ()) -> None:
        """``keep``: what this item is about to make a contradiction, which must not be displaced for it."""
        self.state = state
        self.keep = frozenset(keep)
        self.reducer = reducer
        self.limit = state.limits["max_selected_items"]
        self.count = state.selected_count
        self.selected: list[str] = []
        self.deselected: list[str] = []
        self.deselection: list[dict[str, str]] = []
        self.not_selected: list[dict[str, str]] = []
        self.escalated: dict[str, str] | None = None
        self._ranked: list[Rank] | None = None

    def holds(self, item_id: str) -> bool:
        if item_id in self.selected:
            return True
        return self.state.is_selected(item_id) and item_id not in self.deselected

    def live(self, hypothesis_id: str) -> bool:
        hyp = self.state.hypotheses.get(hypothesis_id)
        return hyp is not None and self.reducer.hypothesis_status(self.state, hyp) != "refuted"

    def admit(
        self, item_id: str, *, must_stay: bool, what: str, reason: str | None = None, counts: bool | None = None
    ) -> None:
        """Select ``item_id``, displacing the lowest-ranked observation when the selection is full. ``counts``:
        whether it takes room (a derived summary does not); read from the state when it is recorded already."""
        if self.holds(item_id):
            return
        if item_id in self.deselected:  # displaced by this item a moment ago: undo that instead
            index = self.deselected.index(item_id)
            del self.deselected[index], self.deselection[index]
            self.count += self._counts(item_id)
            return
        counts = self._counts(item_id) if counts is None else counts
        if not counts or self.count < self.limit:
            self._take(item_id, counts)
            return
        lowest = self._lowest(above=None if must_stay else (0, 0, self.state.version + 1))
        if lowest is not None:
            tier, _, version, _, victims = lowest
            copies = f"; one source with {', '.join(victims)}" if len(victims) > 1 else ""
            for victim in victims:
                self.deselected.append(victim)
                self.deselection.append(
                    {
                        "id": victim,
                        "reason": f"room for {what} {item_id!r}: ranked lowest ({TIERS[tier]}, v{version}){copies}",
                    }
                )
            self.count -= 1
            self._take(item_id, counts)
            return
        if must_stay:
            self.escalated = {
                "to": ESCALATION,
                "reason": reason
                or f"{what} {item_id!r} does not fit within max_selected_items ({self.limit}): "
                "the selection holds only hypotheses and their contradictions",
            }
            self.not_selected.append({"id": item_id, "reason": "max_selected_items reached; escalated"})
        else:
            self.not_selected.append({"id": item_id, "reason": "max_selected_items reached"})

    def decision(self) -> dict[str, Any]:
        decision: dict[str, Any] = {}
        for key in ("selected", "deselected", "deselection", "not_selected"):
            if getattr(self, key):
                decision[key] = getattr(self, key)
        if self.escalated is not None:
            decision["escalated"] = self.escalated
        return decision

    def _take(self, item_id: str, counts: bool) -> None:
        self.selected.append(item_id)
        self.count += counts

    def _counts(self, item_id: str) -> bool:
        obs = self.state.observations.get(item_id)
        if obs is None:
            return True
        if obs.derived_from:
            return False
        return not self.reducer.has_copies(self.state) or not self.shares(
            self.reducer.copy_group(self.state, item_id), item_id
        )

    def shares(self, group: tuple[str, ...], item_id: str) -> bool:
        """Whether a copy of the same excerpt as ``item_id`` (another of ``group``) is selected: then it takes
        no room of its own."""
        return any(self.holds(ref) for ref in group if ref != item_id)

    @property
    def ranked(self) -> list[Rank]:
        """The rank of every selected observation that a policy may deselect."""
        if self._ranked is None:
            self._ranked = _ranks(self.state, self)
        return self._ranked

    def _lowest(self, above: tuple[int, int, int] | None) -> Rank | None:
        """The lowest rank, if it is below ``above`` (any, when None), of what this item may still displace."""
        ranked = self.ranked  # only what the state has selected
        if self.keep or self.deselected:
            gone = self.keep.union(self.deselected)
            ranked = [rank for rank in ranked if gone.isdisjoint(rank[4])]
        lowest = min(ranked, default=None)
        if lowest is None:
            return None
        return lowest if above is None or lowest[:3] < above else None


Rank = tuple[int, int, int, str, tuple[str, ...]]
"""(tier, references, version, id, members) of an observation, or of a group of copies of one excerpt (the
highest of its members' ranks, and every member selected): the lowest is deselected first, ties broken by id."""


def _ranks(state: WorkspaceState, room: Room) -> list[Rank]:
    """The rank of each selected observation the policy may deselect: not a contradiction of a live
    hypothesis, not a derived summary. One pass over the selection and the (few) hypotheses, questions and
    proposals."""
    references: Counter[str] = Counter()
    protected: set[str] = set()
    for hyp in state.hypotheses.values():
        references.update(hyp.supporting)
        if hyp.challenging:
            references.update(hyp.challenging)
            if room.live(hyp.id):
                protected.update(hyp.challenging)
    for question in state.questions.values():
        if question.evidence:
            references.update(question.evidence)
    rests_on: set[str] = set()
    for proposal in state.proposals.values():
        if proposal.decision not in ("revised", "withdrawn"):
            for dep in proposal.depends_on:
                rests_on.add(dep)
                supported = state.hypotheses.get(dep)
                if supported is not None:
                    rests_on.update(supported.supporting)
    observations = state.observations
    copies = room.reducer.has_copies(state)
    plain = []
    groups: dict[str, list[str]] = {}  # a group of copies, by its source: its selected members
    for ref in room.reducer.selected_now(state):
        obs = observations.get(ref)
        if obs is None:
            continue  # a hypothesis
        if obs.derived_from:
            references.update(obs.derived_from)
            continue
        if copies:
            group = room.reducer.copy_group(state, ref)
            if len(group) > 1:
                groups.setdefault(group[0], []).append(ref)
        if ref not in protected:
            plain.append(obs)
    if not references and not rests_on and not groups:  # the common case: all of rank 0, by version
        return [(0, 0, obs.version, obs.id, (obs.id,)) for obs in plain]
    ranks: list[Rank] = []
    grouped: dict[str, list[Rank]] = {}
    for obs in plain:
        count = references[obs.id]
        rank = (2 if obs.id in rests_on else 1 if count else 0, count, obs.version, obs.id, (obs.id,))
        group = room.reducer.copy_group(state, obs.id) if groups else (obs.id,)
        if len(group) > 1:
            grouped.setdefault(group[0], []).append(rank)
        else:
            ranks.append(rank)
    for source, members in grouped.items():
        if len(members) < len(groups[source]):
            continue  # a copy challenges a live hypothesis: the source stays, with all its copies
        top = max(members)
        ranks.append((*top[:4], tuple(sorted(rank[3] for rank in members))))
    return ranks
