"""Turning submitted JSON into a Contribution, or into an ``invalid`` refusal that names the field."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import structlog
from pydantic import ValidationError

from caseboard.domain.contribution import Contribution
from caseboard.domain.errors import Reason, Refused
from caseboard.domain.items import ITEM_TYPES

log = structlog.get_logger("caseboard.coordinator")


def parse_contribution(raw: str | bytes | dict[str, Any]) -> Contribution:
    """Validated strictly as JSON: ``"300"`` is not an int, ``true`` is not 1, a number is not a timestamp.

    A refusal is logged here (``contribution_refused``, like the coordinator's), since it never reaches it.
    """
    data: dict[str, Any] = {}
    try:
        text: str | bytes
        if isinstance(raw, dict):
            data, text = raw, json.dumps(raw)
        else:
            data, text = _json_object(raw), raw
        try:
            return Contribution.model_validate_json(text, strict=True)
        except ValidationError as error:
            raise refusal_from(error.errors(include_url=False)) from None
    except Refused as refusal:
        author = data.get("author")
        log.info(
            "contribution_refused",
            workspace_id=_short_id(data.get("workspace_id")),
            author=_short_id(author.get("principal") if isinstance(author, dict) else None),
            reason=refusal.reason.value,
            field=refusal.field,
        )
        raise


def _json_object(raw: str | bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise Refused(Reason.INVALID, f"not JSON: {error}", field="$") from None
    if not isinstance(data, dict):
        raise Refused(Reason.INVALID, "a contribution is a JSON object", field="$")
    return data


def _short_id(value: Any) -> str | None:
    """An id worth logging from unvalidated input: a short string, never a payload."""
    return value if isinstance(value, str) and len(value) <= 128 else None


def refusal_from(problems: Sequence[Any]) -> Refused:
    """An ``invalid`` refusal naming the first problem pydantic found (and how many more there are)."""
    errors = list(problems)
    if len(errors) > 1:  # a failed item is dropped, so items may look too short: a consequence, not a problem
        errors = [e for e in errors if not (e["loc"] == ("items",) and e["type"] == "too_short")]
    first = errors[0]
    path = field_path(first["loc"])
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


def field_path(loc: Sequence[int | str]) -> str:
    """pydantic's error location as the field path a user reads: ``items[0].source.system``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ITEM_TYPES and out.endswith("]"):
            continue  # the discriminator pydantic adds to the location, not a field
        else:
            out += f".{part}" if out else str(part)
    return out or "$"
