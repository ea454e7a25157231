"""What the model-facing view may show, section by section, in the order of the selection ranks.

``sections(state, reducer, role, as_of, times, flags)`` lists the candidates of every section: the reserved
sections first (``RESERVED``), then the role's own (``ROLE_SECTIONS``). An entry is listed once, in the first
section that has it. Statuses come from the reducer's interface, judged at ``as_of``; nothing here reads a
clock (docs/model-view.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from caseboard.domain.items import Role
from caseboard.projections.freshness import stale_evidence, stale_proposals
from caseboard.reducers import ObservationRec, ProposalRec, Reducer, WorkspaceState, finding, sources

RESERVED = ("late_counterevidence", "contradictions", "blocking", "revalidation", "open_questions")
"""Shown first and always: late counterevidence (observations that arrived after the workspace closed and bear on
its conclusion, with what they bear on and why: reducer v4, ADR 0165), contradictions of live hypotheses (with
the hypotheses), blocking conditions
(pending and incomplete work), proposals that require revalidation (with the stale evidence under them),
open questions (with the answers that cited no evidence)."""
ROLE_SECTIONS: dict[Role, tuple[str, ...]] = {
    Role.PLANNER: ("hypotheses", "observations", "proposals", "results", "reviews"),
    Role.SPECIALIST: ("observations", "results", "hypotheses", "proposals", "reviews"),
    Role.VERIFIER: ("hypotheses", "results", "observations", "proposals", "reviews"),
    Role.REPORTER: ("hypotheses", "proposals", "results", "observations", "reviews"),
    Role.CONTROLLER: ("proposals", "reviews", "hypotheses", "results", "observations"),
    Role.OPERATOR: ("proposals", "reviews", "hypotheses", "results", "observations"),
    Role.INTAKE: ("observations", "results", "hypotheses", "proposals", "reviews"),  # its alerts first
}
PENDING = ("awaiting_result", "claimed")
FINISHED = ("completed", "failed")


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class Provenance:
    author: str
    status: str
    recorded_at_version: int
    verified: bool = False
    source: str | None = None
    event_time: str | None = None
    event_time_quality: str | None = None
    ingested_at: str | None = None


@dataclass(frozen=True)
class Candidate:
    section: str
    kind: str
    ref: str
    note: str | None
    provenance: Provenance
    body: str
    evidence_ref: str | None = None
    suspicious: tuple[str, ...] = ()
    cited: str | None = None
    """The cited excerpt's lines of the entry (model_view.cited_lines), when its evidence_ref cites one."""


@dataclass
class Sections:
    """The candidates in display order, and what the view records beside them."""

    candidates: list[Candidate] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    stale_proposals: dict[str, list[str]] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)

    def add(self, candidate: Candidate | None) -> None:
        if candidate is not None and candidate.ref not in self.seen:
            self.seen.add(candidate.ref)
            self.candidates.append(candidate)


def sections(
    state: WorkspaceState,
    reducer: Reducer[WorkspaceState],
    role: Role,
    as_of: datetime | None,
    times: dict[int, datetime],
    flags: dict[str, list[str]],
) -> Sections:
    out = Sections()
    evidence = stale_evidence(state, reducer, as_of)
    expiry = {e.observation: e for e in evidence}
    out.stale = [e.observation for e in evidence]
    out.stale_proposals = stale_proposals(state, reducer, as_of)
    hyp_status = {h.id: reducer.hypothesis_status(state, h) for h in state.hypotheses.values()}
    live = [h for h in state.hypotheses.values() if hyp_status[h.id] != "refuted"]
    prop_status = {p.id: reducer.proposal_status(state, p, as_of) for p in state.proposals.values()}
    coverage = getattr(state, "coverage", {})
    reviews = list(getattr(state, "reviews", {}).values())
    last_review = {r.proposal: r for r in reviews}
    unsettled: dict[str, list[Any]] = {}  # reducer v4: verifications and answers whose checks did not cover
    for rec in getattr(state, "unsettled", {}).values():
        unsettled.setdefault(rec.claim, []).append(rec)

    def observation(section: str, obs_id: str, note: str | None = None) -> Candidate | None:
        obs = state.observations.get(obs_id)
        if obs is None:
            return None
        status = "selected" if state.is_selected(obs.id) else "not selected"
        if obs.derived_from:
            status += ", derived summary of " + ", ".join(sources(state, obs.derived_from)) + " (not a source)"
        copied = getattr(state, "copy_of", {}).get(obs.id)
        if copied is not None:
            status += f", copy of {copied} (the same cited excerpt: not a separate source)"
        fenced = getattr(state, "fenced_writes", {}).get(obs.id)
        if fenced is not None:  # reducer v4, rule 5 (ADR 0167)
            status += (
                f", FENCED WRITER: its author's claim on {fenced.request_id} was fenced (not counted as support "
                "until the live holder's result agrees or a verification settles it)"
            )
        if obs.id in expiry:
            status += f", STALE: expired at {iso(obs.expires_at)} (as of {iso(as_of)})"
        elif obs.expires_at is not None:
            status += f", expires at {iso(obs.expires_at)}"
        prov = Provenance(
            author=f"{obs.author} ({obs.role})",
            status=status,
            source=f"{obs.source_system}/{obs.source_instance}",
            event_time=iso(obs.event_time),
            event_time_quality=obs.event_time_quality,
            ingested_at=iso(obs.ingested_at),
            recorded_at_version=obs.version,
        )
        return Candidate(
            section, "observation", obs.id, note, prov, obs.statement, obs.evidence_ref, _flags(flags, obs.id)
        )

    def hypothesis(section: str, hyp_id: str) -> Candidate:
        hyp = state.hypotheses[hyp_id]
        status = hyp_status[hyp.id] + ("" if state.is_selected(hyp.id) else ", not selected")
        prov = Provenance(
            author=hyp.author,
            status=status,
            ingested_at=iso(times.get(hyp.version)),
            recorded_at_version=hyp.version,
            verified=hyp.verification in ("confirmed", "refuted"),
        )
        note = f"supporting={','.join(hyp.supporting) or '-'}; challenging={','.join(hyp.challenging) or '-'}"
        for rec in unsettled.get(hyp.id, ()):
            note += f"; coverage_insufficient: {rec.result} by {rec.author} missing {','.join(rec.missing)}"
        return Candidate(section, "hypothesis", hyp.id, note, prov, hyp.statement, None, _flags(flags, hyp.id))

    def proposal(section: str, prop: ProposalRec) -> Candidate:
        prov = Provenance(
            author=prop.author,
            status=prop_status[prop.id],
            ingested_at=iso(times.get(prop.version)),
            recorded_at_version=prop.version,
        )
        parts = [f"based_on_workspace_version={prop.basis}", f"depends_on={','.join(prop.depends_on) or '-'}"]
        if prop.id in out.stale_proposals:
            parts.append("requires revalidation because of stale evidence: " + ",".join(out.stale_proposals[prop.id]))
        review = last_review.get(prop.id)
        if review is not None:
            parts.append(_review_note(review))
        body = prop.summary
        return Candidate(section, "proposal", prop.id, "; ".join(parts), prov, body, None, _flags(flags, prop.id))

    def work(section: str, rec: Any) -> Candidate:
        holder = f", held by {rec.holder} (generation {rec.generation})" if rec.holder else ""
        prov = Provenance(
            author=rec.requested_by,
            status=f"{rec.status}{holder}",
            ingested_at=iso(rec.requested_at),
            recorded_at_version=rec.version,
        )
        said = finding(rec.status, rec.result_summary, coverage.get(rec.request_id))
        if said:
            body = f"{said} (requested: {rec.target})"
        else:
            body = rec.target + (f" - {rec.question}" if rec.question else "")
        note = f"kind={rec.kind}"
        return Candidate(section, "work", rec.request_id, note, prov, body, None, _flags(flags, rec.request_id))

    # 1. late counterevidence: observations that arrived after the workspace closed, bearing on its conclusion
    late: dict[str, list[Any]] = {}
    for rec in reducer.late_counterevidence(state):
        late.setdefault(rec.observation, []).append(rec)
    for obs_id, recs in late.items():
        bears = "; ".join(f"{rec.bears_on} ({rec.kind}): {rec.why}" for rec in recs)
        out.add(
            observation("late_counterevidence", obs_id, f"LATE: arrived after the workspace closed; bears on {bears}")
        )
    # 2. contradictions: every live hypothesis with evidence against it, selected or not, and that evidence
    challenged: dict[str, list[str]] = {}
    for hyp in live:
        for obs_id in hyp.challenging:
            challenged.setdefault(obs_id, []).append(hyp.id)
    for hyp in live:
        if not hyp.challenging:
            continue
        out.add(hypothesis("contradictions", hyp.id))
        for obs_id in hyp.challenging:
            out.add(observation("contradictions", obs_id, f"challenges hypothesis {', '.join(challenged[obs_id])}"))
    # 3. blocking conditions: pending work, and checks that did not complete (with what they covered)
    for rec in state.work.values():
        if rec.status in PENDING or rec.status == "incomplete":
            out.add(work("blocking", rec))
    # 4. proposals that require revalidation, and the stale evidence under them
    for prop in state.proposals.values():
        if prop_status[prop.id] != "requires_revalidation":
            continue
        out.add(proposal("revalidation", prop))
        for obs_id in out.stale_proposals.get(prop.id, ()):
            out.add(observation("revalidation", obs_id, f"stale evidence under proposal {prop.id}"))
    # 5. open questions, each with the answers that cited no evidence beside it
    unsupported: dict[str, list[Any]] = {}
    for answer in getattr(state, "unsupported_answers", {}).values():
        unsupported.setdefault(answer.question, []).append(answer)
    for question in state.questions.values():
        if question.answered_version is not None:
            continue
        prov = Provenance(
            author=question.author,
            status="open",
            ingested_at=iso(times.get(question.version)),
            recorded_at_version=question.version,
        )
        note = f"about {question.about}" if question.about else None
        flagged = _flags(flags, question.id)
        out.add(Candidate("open_questions", "question", question.id, note, prov, question.text, None, flagged))
        gaps = {rec.ref: rec for rec in unsettled.get(question.id, ())}
        for answer in unsupported.get(question.id, ()):
            gap = gaps.get(answer.ref)
            prov = Provenance(
                author=answer.author,
                status=f"coverage_insufficient: missing {','.join(gap.missing)}, so the question stays open"
                if gap is not None
                else "unsupported: cites no evidence, so the question stays open",
                ingested_at=iso(times.get(answer.version)),
                recorded_at_version=answer.version,
            )
            out.add(Candidate("open_questions", "answer", answer.ref, f"answer to {question.id}", prov, answer.text))
    # 6. the role's own sections
    for section in ROLE_SECTIONS[role]:
        if section == "hypotheses":
            for hyp in _hypotheses(state, live):
                out.add(hypothesis("hypotheses", hyp.id))
        elif section == "observations":
            _observations(state, out, observation)
        elif section == "proposals":
            for prop in state.proposals.values():
                out.add(proposal("proposals", prop))
        elif section == "results":
            for rec in state.work.values():
                if rec.status in FINISHED:
                    out.add(work("results", rec))
        else:
            for review in reviews:
                out.add(_review(review, times))
    return out


def _hypotheses(state: WorkspaceState, live: list[Any]) -> list[Any]:
    """Selected hypotheses, then live ones the selection left out."""
    selected = [h for h in state.hypotheses.values() if state.is_selected(h.id)]
    return selected + [h for h in live if not state.is_selected(h.id)]


def _observations(
    state: WorkspaceState, out: Sections, observation: Callable[[str, str, str | None], Candidate | None]
) -> None:
    """Selected observations, most referenced then most recent first; derived summaries of the same sources
    collapse into one entry that names the others, and so do copies of one cited excerpt (reducer v4, rule 6):
    one source, shown once, with its copies."""
    references: dict[str, int] = {}
    for hyp in state.hypotheses.values():
        for ref in (*hyp.supporting, *hyp.challenging):
            references[ref] = references.get(ref, 0) + 1
    for prop in state.proposals.values():
        for ref in prop.depends_on:
            references[ref] = references.get(ref, 0) + 1
    chosen: list[ObservationRec] = [state.observations[i] for i in state.selected_ids() if i in state.observations]
    chosen.sort(key=lambda o: (-references.get(o.id, 0), -o.version, o.id))
    groups: dict[tuple[str, ...], list[str]] = {}
    copy_of: Any = getattr(state, "copy_of", {})
    copies: dict[str, list[str]] = {}
    for obs in chosen:
        if obs.derived_from:
            groups.setdefault(tuple(sorted(sources(state, obs.derived_from))), []).append(obs.id)
        elif copy_of:
            copies.setdefault(copy_of.get(obs.id, obs.id), []).append(obs.id)
    for obs in chosen:
        if not obs.derived_from:
            source = copy_of.get(obs.id, obs.id)
            same = copies.get(source, [obs.id])
            if same[0] != obs.id:
                continue  # shown with the first of its group, under its source when that is selected
            shown = source if source in same else obs.id
            others = [ref for ref in sorted(same, key=lambda ref: state.observations[ref].version) if ref != shown]
            note = f"one source with its copies (the same cited excerpt): {', '.join(others)}" if others else None
            out.add(observation("observations", shown, note))
            out.seen.update(others)
            continue
        group = groups[tuple(sorted(sources(state, obs.derived_from)))]
        if group[0] != obs.id:
            continue
        note = f"also derived from the same sources: {', '.join(group[1:])}" if len(group) > 1 else None
        out.add(observation("observations", obs.id, note))
        out.seen.update(group[1:])


def _review(review: Any, times: dict[int, datetime]) -> Candidate:
    prov = Provenance(
        author=review.author,
        status=review.decision,
        ingested_at=iso(times.get(review.version)),
        recorded_at_version=review.version,
    )
    return Candidate(
        "reviews",
        "review",
        review.ref,
        f"proposal {review.proposal}; {_review_note(review)}",
        prov,
        review.what_changed or "",
    )


def _review_note(review: Any) -> str:
    against = review.against_version
    made = (
        f"last review {review.decision} made against version {against}"
        if against
        else (f"last review {review.decision}, the version it was made against not stated")
    )
    unseen = review.unseen_changes
    if unseen:
        return f"{made}; did not cover the changes at version {', '.join(str(v) for v in unseen)}"
    return f"{made}; covered every material change before it"


def _flags(flags: dict[str, list[str]], ref: str) -> tuple[str, ...]:
    return tuple(flags.get(ref, ()))
