"""``file_lines``, the one reader of a recorded incident's lines: read a chunk at a time, it gives exactly the
lines a plain split gives, wherever the chunks end, from a line's start to the line that reaches an end, and a
line longer than any commit as None, however many chunks it spans (docs/adr/0193)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caseboard.domain.errors import CaseboardError
from caseboard.replay import records
from caseboard.replay.records import file_lines, file_records


def expected(content: bytes, start: int, end: int | None, longest: int) -> list[bytes | None]:
    """What a plain split of the whole file gives, from ``start`` to the line that reaches ``end``."""
    out: list[bytes | None] = []
    at = 0
    pieces = content.split(b"\n")
    if content.endswith(b"\n") or not content:  # nothing after the last line's end
        pieces.pop()
    for line in pieces:
        if at >= start:
            out.append(line if len(line) <= longest else None)
            if end is not None and at + len(line) + 1 >= end:
                break
        at += len(line) + 1
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"x")), max_size=12),
    ends_with_newline=st.booleans(),
    chunk=st.integers(1, 50),
    longest=st.integers(0, 30),
    start_line=st.integers(0, 12),
    end=st.one_of(st.none(), st.integers(0, 500)),
)
def test_chunked_lines_are_the_lines_of_a_plain_split(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    lines: list[bytes],
    ends_with_newline: bool,
    chunk: int,
    longest: int,
    start_line: int,
    end: int | None,
) -> None:
    content = b"\n".join(lines) + (b"\n" if ends_with_newline and lines else b"")
    path = tmp_path_factory.mktemp("lines") / "incident.jsonl"
    path.write_bytes(content)
    start = sum(len(line) + 1 for line in lines[:start_line])
    monkeypatch.setattr(records, "READ_CHUNK", chunk)
    monkeypatch.setattr(records, "MAX_COMMIT_BYTES", longest)
    assert list(file_lines(path, start, end)) == expected(content, start, end, longest)


def test_a_record_numbers_its_line_and_marks_one_too_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "incident.jsonl"
    path.write_bytes(b"first\n" + b"y" * 100 + b"\nthird")
    monkeypatch.setattr(records, "READ_CHUNK", 8)
    monkeypatch.setattr(records, "MAX_COMMIT_BYTES", 10)
    read = [(r.position, r.data, r.too_long) for r in file_records(path)]
    assert read == [(1, b"first", False), (2, b"", True), (3, b"third", False)]
    assert [r.position for r in file_records(path, 6)] == [1, 2]  # numbered from the start given


def test_a_device_or_a_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CaseboardError, match="not a regular file"):
        list(file_lines(Path("/dev/zero")))
    with pytest.raises(CaseboardError, match=r"cannot read .*No such file"):
        list(file_lines(tmp_path / "absent.jsonl"))
