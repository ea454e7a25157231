"""The walk of the versions (``caseboard/replay/history.py``) and the report built on it, beyond the goldens:
the causes each reducer gives, the walk's refusals, and a report of a stored workspace whose row was altered."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from caseboard.cli.main import main
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.errors import CaseboardError
from caseboard.ledger import open_ledger
from caseboard.reducers import get_reducer
from caseboard.replay.history import history, walk
from caseboard.replay.records import read_file
from caseboard.replay.transfer import import_file
from caseboard.report import model, page
from caseboard.report.source import file_record, ledger_record
from tests.conftest import contribution, open_item

CORPUS = Path(__file__).resolve().parents[2] / "corpus"


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> Iterator[None]:
    yield
    structlog.reset_defaults()  # main() configured logging onto the captured stderr


def status_changes(name: str, reducer: str | None = None) -> list[str]:
    steps = history(read_file(CORPUS / f"{name}.jsonl"), get_reducer(reducer)).steps
    return [f"v{sc.version} {sc.item} {sc.before}->{sc.after}" for s in steps for sc in s.status_changes]


def test_revalidation_causes_name_an_expired_observation_and_the_dependency_path() -> None:
    reducer = get_reducer()
    state = reducer.fold(reducer.initial("expired-evidence-044"), read_file(CORPUS / "expired-evidence-044.jsonl"))
    [cause] = reducer.revalidation_causes(state, state.proposals["proposal-001"], state.at)
    assert (cause.kind, cause.reference, cause.version) == ("expired", "obs-no-client-change", 5)
    assert cause.expired_at is not None and state.at is not None and cause.expired_at <= state.at
    steps = history(read_file(CORPUS / "expired-evidence-044.jsonl"), reducer).steps
    [change] = [sc for sc in steps[7].status_changes if sc.item == "proposal-001"]
    assert change.after == "requires_revalidation"
    assert change.causes[-1].via == "evidence challenging hyp-client-bug, which proposal-001 depends on"


def test_a_current_proposal_has_no_revalidation_cause() -> None:
    reducer = get_reducer()
    commits = list(read_file(CORPUS / "incident-042.jsonl"))
    state = reducer.fold(reducer.initial("incident-042"), commits)
    assert reducer.revalidation_causes(state, state.proposals["proposal-008"], state.at) != []
    state = reducer.fold(reducer.initial("scope-change-051"), read_file(CORPUS / "scope-change-051.jsonl"))
    assert reducer.proposal_status(state, state.proposals["proposal-001"], state.at) == "accepted"
    assert reducer.revalidation_causes(state, state.proposals["proposal-001"], state.at) == []


def test_the_causes_follow_the_reducer_chosen() -> None:
    """v2 does not count a challenge resting only on an unverified clock as material: proposal-004 stays
    accepted at version 10, where v3 makes it require revalidation."""
    v3 = status_changes("stale-proposal-066")
    v2 = status_changes("stale-proposal-066", "workspace-rules-v2")
    assert "v10 proposal-004 accepted->requires_revalidation" in v3
    assert not any(change.startswith("v10 proposal-004") for change in v2)


def test_the_walk_refuses_commits_out_of_order() -> None:
    commits = list(read_file(CORPUS / "incident-042.jsonl"))
    commits[4], commits[5] = commits[5], commits[4]
    with pytest.raises(CaseboardError, match="version 6 of 'incident-042' cannot follow version 4"):
        list(walk(commits, get_reducer()))


def test_a_report_of_a_stored_workspace_with_an_altered_row_says_so_and_stops_before_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    ledger = open_ledger(url)
    import_file(ledger, CORPUS / "incident-042.jsonl")
    ledger.close()
    with sqlite3.connect(url[len("sqlite:///") :]) as conn:
        (state,) = conn.execute("SELECT state FROM caseboard_commits WHERE originator_version = 16").fetchone()
        edited = bytes(state).replace(b"Authentication failures", b"Nothing unusual")
        assert edited != bytes(state)
        conn.execute("UPDATE caseboard_commits SET state = ? WHERE originator_version = 16", (edited,))
    out = tmp_path / "report.html"
    assert main(["--database-url", url, "report", "incident-042", "--out", str(out)]) == 1
    assert "NOT INTACT at version 16" in capsys.readouterr().err
    html = out.read_text()
    assert 'data-intact="false">NOT INTACT: this record fails verification at version 16 (altered)' in html
    assert "Only versions 1 to 15" in html
    assert "Nothing unusual" not in html and "obs-authentication-failures" not in html
    ledger = open_ledger(url)
    try:
        built = model.build_from(ledger_record(ledger, "incident-042"), get_reducer())
    finally:
        ledger.close()
    assert (built.version, built.recorded, built.intact) == (15, 15, False)


def test_the_page_escapes_what_contributions_say() -> None:
    """Text from the ledger never becomes markup, in the page or in the graph's embedded data."""
    hostile = "</script><img src=x onerror=alert(1)> & done"
    ledger = open_ledger("memory://")
    try:
        coordinator = Coordinator(ledger)
        observation = {
            "type": "observation",
            "id": "obs-1",
            "statement": hostile,
            "source": {"system": "auth-logs", "instance": "payments-api-3"},
            "event_time": "2026-03-02T13:57:00Z",
            "event_time_quality": "unverified",
        }
        hypothesis = {"type": "hypothesis", "id": "hyp-1", "statement": hostile, "supporting_evidence": ["obs-1"]}
        outcomes = [
            coordinator.submit(parse_contribution(contribution([open_item()], "op", "operator"))),
            coordinator.submit(parse_contribution(contribution([observation], "spec-1", "specialist"))),
            coordinator.submit(parse_contribution(contribution([hypothesis]))),
        ]
        assert all(o["ok"] for o in outcomes), outcomes
        built = model.build_from(ledger_record(ledger, "ws-1"), get_reducer())
    finally:
        ledger.close()
    html = page.render(built)
    assert hostile not in html and "<img" not in html
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; &amp; done" in html
    data = html.split('id="graph-data">')[1].split("</script>")[0]
    assert "\\u003c/script\\u003e" in data and "<" not in data
    assert html.count("<script") == 3  # the graph's data, cytoscape.js, the page's script
    assert 'class="badge unverified"' in html


def test_late_arrivals_are_visible_in_the_timeline_and_the_versions() -> None:
    built = model.build_from(file_record(CORPUS / "late-arrival-017.jsonl"), get_reducer())
    late = [entry["id"] for entry in built.timeline if entry["late_arrival"]]
    assert sorted(late) == ["obs-connection-resets", "obs-failover-time"]  # both arrived after the close
    html = page.render(built)
    row = html.split('data-id="obs-connection-resets"')[1].split("</tr>")[0]
    assert '<span class="badge late">late arrival</span>' in row
    assert "late.obs-connection-resets" in html  # the version that recorded it says so
