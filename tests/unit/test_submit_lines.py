"""``caseboard submit`` reads its input a line at a time and reads no line past ``MAX_BODY_BYTES`` (the HTTP
API's body limit): such a line is refused alone, in bytes as over HTTP, and its rest is skipped unread into
memory."""

from __future__ import annotations

import io

from caseboard.cli.ledger_cmds import bounded


def lines_of(text: str, limit: int) -> list[str | None]:
    return list(bounded(io.StringIO(text), limit))


def test_a_line_up_to_the_limit_is_kept_and_one_past_it_is_skipped_whole() -> None:
    text = "abcd\nabcde\n" + "x" * 23 + "\nlast"
    assert lines_of(text, 4) == ["abcd\n", None, None, "last"]


def test_the_limit_is_counted_in_bytes_of_utf8() -> None:
    assert lines_of("éé\néa\n", 4) == ["éé\n", "éa\n"]
    assert lines_of("ééé\nok\n", 4) == [None, "ok\n"]  # three characters, six bytes


def test_a_last_line_over_the_limit_without_a_line_break_is_refused() -> None:
    assert lines_of("ok\n" + "y" * 9, 4) == ["ok\n", None]


def test_blank_lines_and_an_empty_input_are_passed_on_as_they_are() -> None:
    assert lines_of("", 4) == []
    assert lines_of("\n\nab\n", 4) == ["\n", "\n", "ab\n"]
