"""Appending commits on PostgreSQL: the store decides who gets a version; a closed ledger is unavailable."""

from __future__ import annotations

import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.commit import Commit
from caseboard.domain.errors import LedgerUnavailable
from caseboard.ledger import EventsourcingLedger, VersionTaken, open_ledger
from tests.conftest import contribution

pytestmark = pytest.mark.postgres

LIMITS = {
    "max_selected_items": 1,
    "max_investigation_cycles": 1,
    "max_open_questions": 1,
    "max_proposals": 1,
    "max_pending_work": 1,
}


def open_workspace(ledger: EventsourcingLedger) -> Commit:
    item = {
        "type": "open",
        "scope": {"tenant_id": "t", "environment": "e", "service": "s"},
        "goal": "g",
        "runtime_limits": LIMITS,
        "execution_mode": "read_only",
    }
    outcome = Coordinator(ledger).submit(parse_contribution(contribution([item], "operator-1", "operator")))
    assert outcome["ok"] is True
    return ledger.read("ws-1")[0]


def test_a_second_append_of_the_same_version_is_version_taken_and_changes_nothing(postgres_url: str) -> None:
    ledger = open_ledger(postgres_url)
    try:
        first = open_workspace(ledger)
        rival = first.model_copy(update={"author": first.author.model_copy(update={"principal": "op-2"})})
        with pytest.raises(VersionTaken):
            ledger.append(rival)
        assert ledger.read("ws-1") == [first]
    finally:
        ledger.close()


def test_appending_to_a_closed_ledger_is_ledger_unavailable(postgres_url: str) -> None:
    ledger = open_ledger(postgres_url)
    first = open_workspace(ledger)
    ledger.close()
    with pytest.raises(LedgerUnavailable):
        ledger.append(first.model_copy(update={"version": 2}))
