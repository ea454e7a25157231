"""The citation shape of evidence_ref: parsed once, stored as a string, today's strings left alone."""

from __future__ import annotations

import json

import pytest

from caseboard.coordinator import parse_contribution
from caseboard.domain.citations import Span, parse_citation
from caseboard.domain.errors import Refusal
from caseboard.domain.items import Observation
from tests.unit.board import obs

AID = "sha256:" + "ab" * 32


def contribution(evidence_ref: object) -> str:
    body = {"workspace_id": "ws-1", "author": {"principal": "s", "role": "specialist"}}
    return json.dumps({**body, "items": [obs("obs-1", evidence_ref=evidence_ref)]})


def test_an_object_citation_is_stored_as_its_string_form_and_parses_back() -> None:
    item = parse_contribution(contribution({"artifact": AID, "lines": [3, 9]})).items[0]
    assert isinstance(item, Observation) and item.evidence_ref == f"{AID}#lines=3-9"
    cited = parse_citation(item.evidence_ref)
    assert cited is not None and (cited.artifact, cited.span) == (AID, Span("lines", 3, 9))
    assert (
        parse_contribution(contribution(f"{AID}#bytes=0-0")).content_digest()
        == parse_contribution(contribution({"artifact": AID, "bytes": [0, 0]})).content_digest()
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"artifact": AID, "lines": [0, 2]},
        {"artifact": AID, "lines": [5, 2]},
        {"artifact": AID},
        {"artifact": AID, "lines": [1, 2], "bytes": [0, 1]},
        {"artifact": "md5:abc", "lines": [1, 2]},
        {"artifact": AID, "lines": [1, 2], "note": "extra"},
    ],
)
def test_a_malformed_citation_is_invalid_and_names_the_evidence_field(bad: object) -> None:
    with pytest.raises(Refusal) as refused:
        parse_contribution(contribution(bad))
    assert (refused.value.reason.value, refused.value.field) == ("invalid", "items[0].evidence_ref")


@pytest.mark.parametrize(
    "free", ["artifact://logs/payments-api/auth", f"{AID}", f"{AID}#lines=3", "sha256:xyz#lines=1-2"]
)
def test_todays_strings_stay_free_references(free: str) -> None:
    item = parse_contribution(contribution(free)).items[0]
    assert isinstance(item, Observation) and item.evidence_ref == free and parse_citation(free) is None


def test_a_lines_range_may_start_at_line_1_and_a_bytes_range_at_byte_0() -> None:
    assert Span.checked("lines", 1, 1) == Span("lines", 1, 1)
    assert Span.checked("bytes", 0, 0) == Span("bytes", 0, 0)
    for unit, first in (("lines", 0), ("bytes", -1)):
        with pytest.raises(ValueError, match=f"{unit} range"):
            Span.checked(unit, first, 3)  # type: ignore[arg-type]


def test_a_range_refused_says_where_its_unit_counts_from() -> None:
    with pytest.raises(ValueError) as lines:
        Span.checked("lines", 0, 3)
    assert str(lines.value) == "lines range 0-3: expected A-B with 1 <= A <= B (lines count from 1, both ends included)"
    with pytest.raises(ValueError) as bytes_:
        Span.checked("bytes", 5, 4)
    assert (
        str(bytes_.value) == "bytes range 5-4: expected A-B with 0 <= A <= B (bytes count from 0, both ends included)"
    )


def test_none_is_no_citation() -> None:
    assert parse_citation(None) is None


def test_an_object_citation_refused_names_its_part_and_the_problem_in_plain_words() -> None:
    artifact = "sha256:" + "a" * 64
    expected = {
        json.dumps({"artifact": artifact, "lines": [0, 3]}): (
            "citation: lines range 0-3: expected A-B with 1 <= A <= B (lines count from 1, both ends included)"
        ),
        json.dumps({"artifact": "nope", "lines": [1, 3]}): (
            "citation.artifact: String should match pattern '^sha256:[0-9a-f]{64}$'"
        ),
    }
    for ref, problem in expected.items():
        line = json.dumps(
            {
                "workspace_id": "w",
                "author": {"principal": "s", "role": "specialist"},
                "items": [obs("o-1", evidence_ref=json.loads(ref))],
            }
        )
        with pytest.raises(Refusal) as refused:
            parse_contribution(line)
        assert (refused.value.field, str(refused.value)) == (
            "items[0].evidence_ref",
            f"items[0].evidence_ref: {problem}",
        )
