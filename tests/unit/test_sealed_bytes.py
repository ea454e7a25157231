"""A sealed commit's bytes: the hash they record and the hash of what they were sealed from, read without
parsing them, and nothing read from bytes that do not end with a hash member."""

from __future__ import annotations

import pytest

from caseboard.domain.commit import SEALED_TAIL, Commit, recorded_hash, stored_hash
from tests.unit.board import Board, obs


@pytest.fixture(scope="module")
def commits() -> list[Commit]:
    board = Board()
    board.open()
    board.ok("specialist", [obs("obs-1")])
    board.ok("specialist", [obs("obs-2")])
    return board.ledger.read(board.workspace_id)


def test_the_hashes_read_off_the_bytes_are_the_commits_own(commits: list[Commit]) -> None:
    for commit in commits:
        data = commit.stored_json
        assert recorded_hash(data) == commit.hash
        assert stored_hash(data) == commit.hash == commit.content_hash()


def test_bytes_without_a_final_hash_member_give_no_hash(commits: list[Commit]) -> None:
    data = commits[1].stored_json
    renamed = data.replace(b',"hash":"', b',"hasx":"')
    unclosed = data[:-2] + b"x}"
    for broken in (renamed, data[-SEALED_TAIL:], b"{}"):
        assert recorded_hash(broken) is None and stored_hash(broken) is None
    assert stored_hash(unclosed) is None  # the member is in place, but the object does not end after it
    assert stored_hash(data[:-1]) is None


def test_a_recorded_hash_that_is_not_ascii_is_read_with_replacement_characters(commits: list[Commit]) -> None:
    data = commits[1].stored_json
    assert recorded_hash(data[:-66] + b"\xff" * 64 + b'"}') == "\ufffd" * 64


def test_commits_are_equal_only_field_by_field(commits: list[Commit]) -> None:
    first, second = commits[1], commits[2]
    assert first != second and first == first.model_copy()
    assert first != first.model_copy(update={"version": 3})
    deep = first.model_copy(deep=True)
    assert deep == first and deep.decisions[0] is not first.decisions[0]
