"""Late counterevidence (rule 2 of docs/rules-of-evidence.md, ADR 0165): what a late arrival bears on.

A closed workspace's conclusions are its hypotheses whose status is ``confirmed`` (or
``confirmed_before_challenge``: a confirmation still stands on the record) and its proposals an operator
``accepted``. An observation recorded as a late arrival (the workspace was closed when it landed) bears on a
conclusion when

1. it *names* it: its statement, or the target or question of the request it is the result of, mentions the
   conclusion's id or the id of what the conclusion rests on (a hypothesis's evidence; a proposal's dependency
   closure), as a whole id;
2. it is *linked* to it: once the workspace is reopened, a ``link`` relates it to the hypothesis, or to a
   hypothesis the proposal rests on;
3. it *shares its service and time window*: it was read where the evidence under the conclusion was (the same
   source system, or an instance in common: the source's instance or the instances of the observation's
   scope), at an event time within the period that evidence covers, widened by ``MARGIN`` on either side (a
   cause precedes its effect: failures an hour before the change are evidence about the change).

A derived summary is not a source (reducer v3): it never bears on a conclusion by itself. Pure, and reads only
the conclusions and what they rest on, never the history.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta

from caseboard.domain import items as it
from caseboard.reducers.workspace_rules_v1.render import iso
from caseboard.reducers.workspace_rules_v1.state import ObservationRec, WorkspaceState
from caseboard.reducers.workspace_rules_v3.render import closure, sources
from caseboard.reducers.workspace_rules_v4.render import hypothesis_status

MARGIN = timedelta(hours=1)
"""How far before the earliest, and after the latest, evidence under a conclusion a late observation's event
time may lie and still be about the same period (ADR 0165)."""
CONFIRMED = ("confirmed", "confirmed_before_challenge")
Bearing = tuple[str, str, str]
"""(what it bears on, ``hypothesis`` or ``proposal``, why)."""
_ID = r"[A-Za-z0-9._:/@-]"


def conclusions(state: WorkspaceState) -> Iterator[tuple[str, str, list[str], list[str]]]:
    """Each conclusion of the workspace: its id, its kind, the ids it rests on, and the observations among them
    (derived summaries resolved to their sources)."""
    for hyp in state.hypotheses.values():
        if hypothesis_status(state, hyp) in CONFIRMED:
            refs = [*hyp.supporting, *hyp.challenging]
            yield hyp.id, "hypothesis", refs, sources(state, refs)
    for proposal in state.proposals.values():
        if proposal.decision == "accepted":
            refs = list(dict.fromkeys(closure(state, proposal)))
            yield proposal.id, "proposal", refs, sources(state, [r for r in refs if r in state.observations])


def bearings(state: WorkspaceState, body: it.ObservationBody, request_id: str | None = None) -> list[Bearing]:
    """What the late observation ``body`` (the result of ``request_id``, if any) bears on among the conclusions
    of ``state`` (the state it lands on), each with why, the first reason found: it names it, or shares its
    source and time window."""
    if body.derived_from:
        return []
    texts = [("its statement", body.statement)]
    request = state.work.get(request_id) if request_id is not None else None
    if request is not None:
        texts += [(f"the request {request.request_id}", f"{request.target} {request.question or ''}")]
    found: list[Bearing] = []
    for ref, kind, rests_on, evidence in conclusions(state):
        why = _names(texts, ref, rests_on) or _alongside(state, body, evidence)
        if why is not None:
            found.append((ref, kind, why))
    return found


def linked(state: WorkspaceState, observation: str, hypothesis: str) -> list[Bearing]:
    """The conclusions a ``link`` of a late observation to ``hypothesis`` makes it bear on: the hypothesis when it
    is confirmed, and every accepted proposal resting on it."""
    why = f"linked to {hypothesis} after it arrived"
    return [(ref, kind, why) for ref, kind, rests_on, _ in conclusions(state) if hypothesis in (ref, *rests_on)]


def _names(texts: list[tuple[str, str]], ref: str, rests_on: list[str]) -> str | None:
    for where, text in texts:
        for name in (ref, *rests_on):
            if re.search(rf"(?<!{_ID}){re.escape(name)}(?!{_ID})", text):
                named = ref if name == ref else f"{name}, which {ref} rests on"
                return f"{where} names {named}"
    return None


def _alongside(state: WorkspaceState, body: it.ObservationBody, evidence: list[str]) -> str | None:
    records = [state.observations[ref] for ref in evidence if ref in state.observations]
    if not records:
        return None
    start = min(rec.event_time for rec in records) - MARGIN
    end = max(rec.event_time for rec in records) + MARGIN
    if not start <= body.event_time <= end:
        return None
    places = {body.source.instance, *(body.scope.instances if body.scope else ())}
    for rec in records:
        if rec.source_system == body.source.system:
            where = f"the same source ({rec.source_system}) as {rec.id}"
        elif places & _places(rec):
            where = f"an instance ({', '.join(sorted(places & _places(rec)))}) in common with {rec.id}"
        else:
            continue
        return f"read from {where}, at {_iso(body.event_time)}, within {_iso(start)}..{_iso(end)}"
    return None


def _places(rec: ObservationRec) -> set[str]:
    return {rec.source_instance, *rec.instances}


def _iso(moment: datetime) -> str:
    return iso(moment) or ""
