"""verify over a PostgreSQL ledger catches rows changed behind the ledger's back, at the first bad version."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psycopg
import pytest
import structlog

from caseboard.cli.main import main
from caseboard.domain.commit import Commit
from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.replay.transfer import import_file
from caseboard.replay.verify import verify_ledger

pytestmark = pytest.mark.postgres
UPDATE_STATE = "UPDATE caseboard_commits SET state = %s WHERE originator_id = %s AND originator_version = %s"
INCIDENT = Path(__file__).resolve().parents[2] / "corpus" / "incident-042.jsonl"


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> Iterator[None]:
    """The CLI logs to the stream of the moment (a capture); later tests must not write there."""
    yield
    structlog.reset_defaults()


@pytest.fixture
def ledger(postgres_url: str) -> Iterator[EventsourcingLedger]:
    ledger = open_ledger(postgres_url)
    import_file(ledger, INCIDENT)
    yield ledger
    ledger.close()


def sql(postgres_url: str, statement: str, *params: object) -> None:
    schema = parse_qs(urlparse(postgres_url).query)["schema"][0]
    with psycopg.connect(postgres_url.split("?")[0], autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute(statement, params)  # type: ignore[arg-type]


def state_of(ledger: EventsourcingLedger, version: int) -> dict[str, object]:
    rows = ledger.events.select_events("incident-042", gt=version - 1, lte=version)
    return dict(json.loads(rows[0].state))


def problem(ledger: EventsourcingLedger) -> tuple[int, str]:
    report = verify_ledger(ledger, "incident-042")
    assert report.problem is not None, report.line()
    return report.problem.version, report.problem.kind


def test_an_untouched_ledger_verifies(ledger: EventsourcingLedger) -> None:
    report = verify_ledger(ledger, "incident-042")
    assert report.intact and report.commits == 20


def test_an_update_of_one_rows_content_is_reported_at_that_version(
    ledger: EventsourcingLedger, postgres_url: str
) -> None:
    data = state_of(ledger, 12)
    data["at"] = "2026-03-02T14:05:16Z"
    sql(postgres_url, UPDATE_STATE, json.dumps(data).encode(), "incident-042", 12)
    assert problem(ledger) == (12, "altered")


def test_an_updated_and_resealed_row_is_caught_by_the_next_link(ledger: EventsourcingLedger, postgres_url: str) -> None:
    commit = Commit.model_validate(state_of(ledger, 9))
    decision = {"generation": 7, "lease_expires_at": "2026-03-02T14:09:44Z"}
    forged = commit.model_copy(update={"decisions": (decision,), "hash": None}).sealed()
    sql(postgres_url, UPDATE_STATE, forged.model_dump_json(exclude_none=True).encode(), "incident-042", 9)
    assert problem(ledger) == (9, "broken_link")


def test_a_deleted_row_is_reported_as_the_missing_version(ledger: EventsourcingLedger, postgres_url: str) -> None:
    sql(
        postgres_url,
        "DELETE FROM caseboard_commits WHERE originator_id = %s AND originator_version = 7",
        "incident-042",
    )
    assert problem(ledger) == (7, "missing")


def test_swapped_rows_are_reported_at_the_first_misplaced_version(
    ledger: EventsourcingLedger, postgres_url: str
) -> None:
    for old, new in ((15, -15), (16, 15), (-15, 16)):
        sql(
            postgres_url,
            "UPDATE caseboard_commits SET originator_version = %s WHERE originator_id = %s AND originator_version = %s",
            new,
            "incident-042",
            old,
        )
    assert problem(ledger) == (15, "out_of_order")


def test_cli_verify_of_a_tampered_workspace_exits_1_and_names_the_version(
    ledger: EventsourcingLedger, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sql(
        postgres_url,
        "UPDATE caseboard_commits SET state = convert_to(replace(convert_from(state, 'UTF8'), "
        "'No deploys in the window', 'One deploy in the window'), 'UTF8') "
        "WHERE originator_id = %s AND originator_version = 11",
        "incident-042",
    )
    assert main(["--database-url", postgres_url, "verify", "incident-042", "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["first_bad_version"], report["kind"]) == (11, "altered")
    assert main(["--database-url", postgres_url, "verify", "no-such-workspace"]) == 2


def test_deleted_last_rows_are_caught_by_an_anchor_kept_elsewhere(
    ledger: EventsourcingLedger, postgres_url: str
) -> None:
    head = verify_ledger(ledger, "incident-042").head_hash
    assert verify_ledger(ledger, "incident-042", anchor=head).anchored_version == 20
    sql(
        postgres_url,
        "DELETE FROM caseboard_commits WHERE originator_id = %s AND originator_version > 18",
        "incident-042",
    )
    assert verify_ledger(ledger, "incident-042").intact  # a chain cut at its end looks whole on its own
    report = verify_ledger(ledger, "incident-042", anchor=head)
    assert report.problem is not None
    assert (report.problem.version, report.problem.kind, report.commits) == (18, "anchor_missing", 18)  # its last
