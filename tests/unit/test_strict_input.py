"""The one parser of submitted JSON (caseboard.coordinator.parse): strict, bounded, and what it accepts is stored
exactly as submitted (issue 10, items 4 and 9; ADR 0045)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from caseboard.coordinator.parse import MAX_JSON_VALUES, parse_contribution, parse_json, too_many_values
from caseboard.domain.commit import Commit
from caseboard.domain.contribution import Contribution
from caseboard.domain.errors import CaseboardError, Refusal
from caseboard.domain.items import MAX_DEPTH, Judgment
from caseboard.ledger import open_ledger
from caseboard.replay.transfer import import_file

ROOT = Path(__file__).resolve().parents[2]
AUTHOR = {"principal": "planner-1", "role": "planner"}


def judgment(output: Any) -> dict[str, Any]:
    return {
        "type": "judgment",
        "invocation_id": "inv-1",
        "component": "planner",
        "model": "m-1",
        "prompt_sha256": "0" * 64,
        "input_workspace_version": 1,
        "output": output,
    }


def contribution(**envelope: Any) -> dict[str, Any]:
    return {"workspace_id": "ws-1", "author": AUTHOR, "items": [judgment({"ok": True})], **envelope}


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"x": value}
    return value


def refusal(raw: str | bytes | dict[str, Any]) -> Refusal:
    with pytest.raises(Refusal) as caught:
        parse_contribution(raw)
    return caught.value


@pytest.mark.parametrize("value", ["2", 2.0, True, "2026-03-02"])
def test_an_expected_version_of_another_json_type_is_refused(value: Any) -> None:
    assert refusal(contribution(expected_version=value)).field == "expected_version"


def test_a_timestamp_is_an_iso_string_and_not_a_number() -> None:
    assert parse_contribution(contribution(at="2026-03-02T14:10:00Z")).at is not None
    assert refusal(contribution(at=1772460600)).field == "at"


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_numbers_json_cannot_carry_are_refused_rather_than_stored_as_null(number: str) -> None:
    raw = json.dumps(contribution()).replace("true", number)
    assert refusal(raw).field == "items[0].output"
    assert refusal(contribution(items=[judgment({"x": math.nan})])).field == "items[0].output"


def test_an_output_nested_past_the_bound_is_refused_naming_the_field_on_every_path() -> None:
    deep = contribution(items=[judgment(nested(MAX_DEPTH + 1))])
    assert "at most 32" in refusal(deep).message
    with pytest.raises(ValidationError) as caught:  # a program's contribution, a worker's, an import's commit
        Contribution.model_validate(deep)
    assert caught.value.errors()[0]["loc"][:4] == ("items", 0, "judgment", "output")
    with pytest.raises(ValidationError):
        Judgment.model_validate(judgment(nested(5000)))


def test_an_output_at_the_bound_is_kept_exactly() -> None:
    output = {"a": nested(MAX_DEPTH - 1), "n": [1.5, -0.0, 10**40, "é"]}
    parsed = parse_contribution(json.dumps(contribution(items=[judgment(output)])))
    assert parsed.items[0].output == output  # type: ignore[union-attr]
    assert json.loads(parsed.model_dump_json())["items"][0]["output"] == output


def test_a_body_of_too_many_values_is_refused_without_being_parsed() -> None:
    huge = b'{"workspace_id":"ws-1","items":[' + b",".join([b"1"] * 1_000_000) + b"]}"
    started = time.perf_counter()
    with pytest.raises(Refusal) as caught:
        parse_json(Contribution, huge)
    assert time.perf_counter() - started < 0.05
    assert caught.value.field == "$" and str(MAX_JSON_VALUES) in caught.value.message


def test_commas_and_brackets_inside_strings_are_not_counted_as_values() -> None:
    text = "," * MAX_JSON_VALUES + "[{"
    assert not too_many_values(json.dumps({"a": text}).encode())
    assert not too_many_values(json.dumps({"a": text + '"'}).encode())  # an escaped quote: the other path
    assert too_many_values(b"[" + b",".join([b"1"] * MAX_JSON_VALUES) + b"]")


@pytest.mark.parametrize(
    "raw", [b"\xff{", b"[" * 5000 + b"]" * 5000, b'{"expected_version": ' + b"9" * 4301 + b"}", b"[]", b""]
)
def test_what_the_parser_cannot_read_is_invalid_at_the_root(raw: bytes) -> None:
    found = refusal(raw)
    assert found.reason.value == "invalid" and found.field == "$"


def test_a_body_behind_a_byte_order_mark_is_refused_naming_the_mark() -> None:
    body = json.dumps(contribution()).encode()
    assert isinstance(parse_json(Contribution, body), Contribution)
    for marked in ("\ufeff".encode() + body, "\ufeff" + body.decode()):  # a file's bytes, and a line read as text
        found = refusal(marked)
        assert found.reason.value == "invalid" and found.field == "$"
        assert "byte order mark (U+FEFF)" in str(found)
    assert "byte order mark" not in str(refusal(b"\xff{"))  # other unreadable bytes keep the parser's words


def test_every_recorded_scenario_contribution_is_strictly_valid() -> None:
    files = [*sorted((ROOT / "corpus" / "scenarios").glob("*.jsonl")), ROOT / "caseboard/scenarios/incident-042.jsonl"]
    shared = ROOT.parent / "shared" / "scenarios" / "incident-042.jsonl"
    files += [shared] if shared.exists() else []
    lines = [line for path in files for line in path.read_text().splitlines() if line.strip()]
    assert len(lines) > 100
    for line in lines:
        data = json.loads(line)
        if "expect" not in data:  # a line a scenario expects refused (by a rule, not by its shape) is left out
            parse_contribution(line)


def test_every_recorded_commit_still_reads() -> None:
    for path in sorted((ROOT / "corpus").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            commit = Commit.model_validate_json(line)
            assert commit.stored_json == line.encode()


def test_an_import_under_a_workspace_id_no_route_can_name_is_refused() -> None:
    ledger = open_ledger("memory://")
    with pytest.raises(CaseboardError, match="no '/'"):
        import_file(ledger, ROOT / "corpus" / "incident-042.jsonl", "ta/repro")
    assert ledger.head("ta/repro") == 0
    assert import_file(ledger, ROOT / "corpus" / "incident-042.jsonl", "ta-repro").commits == 20
    assert refusal({**contribution(), "workspace_id": "ta/repro"}).field == "workspace_id"


def test_commas_inside_strings_do_not_count_as_values() -> None:
    line = '2026-03-02 13:57:00,123 ERROR auth, tls: handshake failed, peer="payments-api-3", retry=1, '
    statement = (line * 60)[:4000]
    items = [
        {
            "type": "observation",
            "id": f"obs-{n}",
            "statement": statement,
            "source": {"system": "auth-logs", "instance": "payments-api-3"},
            "event_time": "2026-03-02T13:57:00Z",
            "event_time_quality": "verified",
        }
        for n in range(100)
    ]
    raw = json.dumps({"workspace_id": "ws-1", "author": {"principal": "s", "role": "specialist"}, "items": items})
    assert raw.count(",") > MAX_JSON_VALUES
    assert len(parse_contribution(raw).items) == 100
