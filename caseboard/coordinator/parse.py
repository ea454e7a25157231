"""Turning submitted JSON into a Contribution, or into an ``invalid`` refusal that names the field."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from caseboard.domain.contribution import Contribution
from caseboard.domain.errors import Reason, Refused
from caseboard.domain.items import ITEM_TYPES


def parse_contribution(raw: str | bytes | dict[str, Any]) -> Contribution:
    """Validated strictly as JSON: ``"300"`` is not an int, ``true`` is not 1, a number is not a timestamp."""
    if isinstance(raw, dict):
        text: str | bytes = json.dumps(raw)
    else:
        text = raw
        try:
            raw = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as error:
            raise Refused(Reason.INVALID, f"not JSON: {error}", field="$") from None
        if not isinstance(raw, dict):
            raise Refused(Reason.INVALID, "a contribution is a JSON object", field="$")
    try:
        return Contribution.model_validate_json(text, strict=True)
    except ValidationError as error:
        raise _refusal(error, raw) from None


def _refusal(error: ValidationError, raw: dict[str, Any]) -> Refused:
    errors = error.errors(include_url=False)
    if len(errors) > 1:  # a failed item is dropped, so items may look too short: a consequence, not a problem
        errors = [e for e in errors if not (e["loc"] == ("items",) and e["type"] == "too_short")]
    first = errors[0]
    path = _path(first["loc"])
    kind, message = first["type"], first["msg"]
    if kind == "union_tag_invalid":
        tag = first.get("ctx", {}).get("tag")
        path = f"{path}.type"
        message = f"unknown item type {tag!r}; known types: {', '.join(ITEM_TYPES)}"
    elif kind == "union_tag_not_found":
        path = f"{path}.type"
        message = "an item needs a 'type'"
    elif kind == "extra_forbidden":
        message = "unknown field: items accept no fields beyond their own"
    elif kind == "missing":
        message = "required field is missing"
    elif kind == "string_too_long":
        limit = first.get("ctx", {}).get("max_length")
        message = f"text is too long (at most {limit} characters; put large material behind evidence_ref)"
    count = len(errors)
    suffix = f" (and {count - 1} more problem{'s' if count > 2 else ''})" if count > 1 else ""
    return Refused(Reason.INVALID, f"{path}: {message}{suffix}", field=path)


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ITEM_TYPES and out.endswith("]"):
            continue  # the discriminator pydantic adds to the location, not a field
        else:
            out += f".{part}" if out else str(part)
    return out or "$"
