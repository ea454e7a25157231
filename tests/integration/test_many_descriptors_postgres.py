"""A process with more than 1,024 open descriptors still commits to PostgreSQL.

A server holding ~1,000 connections (event-stream subscribers, say) opens its database sockets above
descriptor 1023. The append waited on its socket with ``select()`` (``caseboard/ledger/libpq.py``), which
cannot watch such a descriptor: the commit failed with ``ValueError`` (a 500 over HTTP). Found measuring
issue 21's subscribers (docs/adr/0128); the append now waits with ``poll``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import open_ledger
from tests.conftest import contribution, open_item

pytestmark = pytest.mark.postgres


@pytest.fixture
def crowded() -> Iterator[None]:
    """Descriptors 3 .. ~1100 taken, so that every socket opened next is above 1023."""
    taken = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    assert max(taken) > 1023
    yield
    for descriptor in taken:
        os.close(descriptor)


def test_a_commit_lands_when_the_database_socket_is_above_descriptor_1023(postgres_url: str, crowded: None) -> None:
    ledger = open_ledger(postgres_url)
    try:
        opened = Coordinator(ledger).submit(
            parse_contribution(contribution([open_item()], "oncall-operator", "operator"))
        )
        assert opened["ok"], opened
        assert ledger.head("ws-1") == 1
    finally:
        ledger.close()
