"""A free-form JSON value (a judgment's output, a work result's data) is bounded as the compact JSON it is
stored as: its characters counted as written (no spaces, non-ASCII as itself), its nesting, no NaN."""

from __future__ import annotations

import json
import sys

import pytest

from caseboard.domain.items import MAX_DEPTH, bounded_json


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("value", [{"a": [1, 2], "b": {"c": "d"}}, {"note": "журнал входа: ошибка"}])
def test_a_value_exactly_at_the_bound_is_kept_and_one_character_more_is_refused(value: dict[str, object]) -> None:
    size = len(compact(value))
    assert bounded_json(value, size) is value
    with pytest.raises(ValueError, match=f"is {size} characters as JSON; at most {size - 1}"):
        bounded_json(value, size - 1)


def test_nan_and_infinity_are_refused() -> None:
    for number in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="NaN or Infinity"):
            bounded_json({"x": number}, 1000)


def nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


def test_nesting_up_to_the_bound_is_kept_and_one_level_more_is_refused() -> None:
    assert bounded_json(nested(MAX_DEPTH), 10_000) == nested(MAX_DEPTH)
    with pytest.raises(ValueError, match=f"nests more than {MAX_DEPTH} levels"):
        bounded_json(nested(MAX_DEPTH + 1), 10_000)
    lists: list[object] = []
    for _ in range(MAX_DEPTH):
        lists = [lists]
    with pytest.raises(ValueError, match="nests more than"):
        bounded_json({"k": lists}, 10_000)  # a list inside counts as a level too
    assert bounded_json({"k": "[" * (MAX_DEPTH + 5)}, 10_000)  # brackets in a string are no nesting


def test_a_value_too_deep_for_the_encoder_is_refused_with_the_same_words() -> None:
    with pytest.raises(ValueError) as refused:
        bounded_json(nested(sys.getrecursionlimit() * 2), 10**9)
    assert str(refused.value) == f"nests more than {MAX_DEPTH} levels of arrays and objects; at most {MAX_DEPTH}"
