"""Turning submitted JSON into a Contribution (or an HTTP request body), or into an ``invalid`` refusal that
names the field. The one parser of submitted JSON: the command line, the HTTP fast path and the HTTP routes.

Validation is strict and in one pass, straight from the bytes (pydantic's JSON mode): ``"300"`` is not an
int, ``2.0`` and ``true`` are not 2 and 1, a number is not a timestamp, an ISO string is one; what is not
valid UTF-8, nests deeper than the parser allows or holds a number out of range is ``invalid`` too. Before
that, a cheap bound on the work: a body with more JSON values than ``MAX_JSON_VALUES`` is refused without
being parsed, so no body costs more than a few milliseconds of CPU (docs/adr/0045). After it, one pass of a
regular expression over the bytes: a string (or key) escaping NUL or another refused control character is
``invalid``, naming its field (``caseboard/domain/text.py``, docs/adr/0140).
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Sequence
from typing import Any, TypeVar

import structlog
from pydantic import BaseModel, ValidationError

from caseboard.domain.contribution import MAX_ITEMS, Contribution
from caseboard.domain.errors import Reason, Refusal
from caseboard.domain.items import ITEM_TYPES
from caseboard.domain.text import BODY, control_in, describe, escaped_control

log = structlog.get_logger("caseboard.coordinator")

M = TypeVar("M", bound=BaseModel)

MAX_JSON_VALUES = 10_000
"""The most JSON values (scalars, arrays, objects, and keys) a submitted body may hold: more than a contribution
of ``MAX_ITEMS`` items needs, and few enough to parse and validate in a millisecond or two (about 20 ms for a
body wrong at every value: pydantic builds one error per value). ``too_many_values`` tells without parsing."""

MAX_BODY_BYTES = 2 * 1024 * 1024
"""The largest submitted body, in bytes: over HTTP (413 beyond), over MCP, and a line of ``caseboard submit``. A
contribution holds at most ``MAX_ITEMS`` items of short claims; large material lives behind evidence_ref."""

_NOT_STRUCTURAL = bytes(b for b in range(256) if b not in b",[{")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON string, escapes included


def _structural(data: bytes) -> int:
    """How many ``,`` ``[`` ``{`` bytes ``data`` holds (one pass in C)."""
    return len(data.translate(None, _NOT_STRUCTURAL))


def too_many_values(body: bytes, limit: int = MAX_JSON_VALUES) -> bool:
    """Whether ``body`` holds ``limit`` JSON values or more, judged from the ``,`` ``[`` ``{`` outside its
    strings (each value but the first, and each key, follows one), in a few passes in C. A body that is not
    JSON may be misjudged; the parser refuses it anyway."""
    total = _structural(body) if len(body) >= limit else 0
    if total < limit:
        return False
    pieces = body.split(b'"')
    if len(pieces) > 4 * limit:
        return True  # more than ``limit`` strings (keys included), or as many escaped quotes
    if b"\\" in body:  # escapes, perhaps of quotes: the strings as the regular expression finds them
        return _structural(_STRING.sub(b'""', body)) >= limit
    return total - _structural(b"".join(pieces[1::2])) >= limit  # the odd pieces are the strings' contents


def parse_json(model: type[M], raw: str | bytes) -> M:
    """``raw`` validated strictly as JSON into ``model``, or an ``invalid`` ``Refusal`` naming the field."""
    body = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if too_many_values(body):
        raise Refusal(
            Reason.INVALID,
            f"the body holds more than {MAX_JSON_VALUES} JSON values: a contribution has at most {MAX_ITEMS} "
            "items of short claims (put large material behind evidence_ref)",
            field="$",
        )
    try:
        parsed = model.model_validate_json(body, strict=True)
    except ValidationError as error:
        if body.startswith(codecs.BOM_UTF8):  # an editor's mark (JSON allows none, RFC 8259 8.1): name it
            message = "$: not JSON: it begins with a byte order mark (U+FEFF); save or send it as UTF-8 without one"
            raise Refusal(Reason.INVALID, message, field="$") from None
        raise refusal_from(error.errors(include_url=False, include_input=False)) from None
    if BODY.search(body) is not None and escaped_control(body):
        raise _control_refusal(json.loads(body))
    return parsed


def _control_refusal(data: Any) -> Refusal:
    """The ``invalid`` refusal of a valid body holding a refused control character: the first field holding one."""
    stack: list[tuple[tuple[int | str, ...], Any]] = [((), data)]
    while stack:
        loc, value = stack.pop()
        if isinstance(value, str) and control_in(value):
            path = field_path(loc)
            return Refusal(
                Reason.INVALID,
                f"{path}: text holds the control character {describe(value)}, which caseboard does not store",
                field=path,
            )
        if isinstance(value, dict):
            for key, inner in reversed(value.items()):
                if control_in(key):
                    path = field_path(loc)
                    message = f"{path}: a key holds the control character {describe(key)}"
                    return Refusal(Reason.INVALID, message, field=path)
                stack.append(((*loc, key), inner))
        elif isinstance(value, list):
            stack.extend(((*loc, index), inner) for index, inner in reversed(list(enumerate(value))))
    return Refusal(Reason.INVALID, "the body holds a control character caseboard does not store", field="$")


def parse_contribution(raw: str | bytes | dict[str, Any]) -> Contribution:
    """A contribution from the command line (one JSON line) or a program (a dict), by ``parse_json``.

    A refusal is logged here (``contribution_refused``, like the coordinator's), since it never reaches it.
    """
    try:
        if isinstance(raw, dict):
            text: str | bytes = json.dumps(raw)
        else:  # a line's end is not part of its JSON (nor of an error's position)
            text = raw.rstrip(b"\r\n") if isinstance(raw, bytes) else raw.rstrip("\r\n")
        return parse_json(Contribution, text)
    except Refusal as refusal:
        workspace_id, author = _who(raw)
        log.info(
            "contribution_refused",
            workspace_id=workspace_id,
            author=author,
            reason=refusal.reason.value,
            field=refusal.field,
        )
        raise


def _who(raw: str | bytes | dict[str, Any]) -> tuple[str | None, str | None]:
    """The workspace and author a refused contribution names, for the log: only from a small JSON object."""
    data: Any = raw
    if not isinstance(raw, dict):
        if len(raw) > 65536:
            return None, None
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            return None, None
    if not isinstance(data, dict):
        return None, None
    author = data.get("author")
    return _short_id(data.get("workspace_id")), _short_id(author.get("principal") if isinstance(author, dict) else None)


def _short_id(value: Any) -> str | None:
    """An id worth logging from unvalidated input: a short string, never a payload."""
    return value if isinstance(value, str) and len(value) <= 128 else None


def refusal_from(problems: Sequence[Any]) -> Refusal:
    """An ``invalid`` refusal naming every problem pydantic found (an unknown field by its name), the first
    one's path as its ``field``."""
    errors = list(problems)
    if len(errors) > 1:  # a failed item is dropped, so items may look too short: a consequence, not a problem
        errors = [e for e in errors if not (e["loc"] == ("items",) and e["type"] == "too_short")]
    named = [_problem(error) for error in errors[:MAX_PROBLEMS_NAMED]]
    rest = len(errors) - len(named)
    message = "; ".join(f"{path}: {what}" for path, what in named)
    if rest:
        message += f" (and {rest} more problem{'s' if rest > 1 else ''})"
    return Refusal(Reason.INVALID, message, field=named[0][0])


MAX_PROBLEMS_NAMED = 20
"""Problems named in one refusal's message; past them, a count (a message stays a line)."""


def _problem(error: Any) -> tuple[str, str]:
    """(field path, what is wrong there) of one of pydantic's errors, in the contract's words."""
    path = field_path(error["loc"])
    kind, message = error["type"], error["msg"]
    if kind == "union_tag_invalid":
        tag = error.get("ctx", {}).get("tag")
        path = f"{path}.type"
        message = f"unknown item type {tag!r}; known types: {', '.join(ITEM_TYPES)}"
    elif kind == "union_tag_not_found":
        path = f"{path}.type"
        message = "an item needs a 'type'"
    elif kind == "extra_forbidden":
        owner = path.rpartition(".")[0] or "$"
        message = f"unknown field: {owner} accepts no fields beyond its own"
    elif kind == "missing":
        message = "required field is missing"
    elif kind == "value_error":
        message = message.removeprefix("Value error, ")
    elif kind == "json_invalid":
        message = f"not JSON: {error.get('ctx', {}).get('error', message)}"
    elif kind in ("too_short", "too_long"):  # the same words for a list (HTTP's body) and a tuple (a Contribution)
        ctx = error.get("ctx", {})
        limit = ctx.get("min_length" if kind == "too_short" else "max_length")
        bound = "at least" if kind == "too_short" else "at most"
        message = f"{bound} {limit} {'entry' if limit == 1 else 'entries'}"
        if ctx.get("actual_length") is not None:  # pydantic stops counting a mapping's entries past the limit
            message += f", got {ctx['actual_length']}"
    elif kind == "string_too_long":
        limit = error.get("ctx", {}).get("max_length")
        message = f"text is too long (at most {limit} characters; put large material behind evidence_ref)"
    return path, message


def field_path(loc: Sequence[int | str]) -> str:
    """pydantic's error location as the field path a user reads: ``items[0].source.system``."""
    out = ""
    after_index = False
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            after_index = True
            continue
        if after_index and part in ITEM_TYPES:
            after_index = False  # the discriminator pydantic adds after an item's index, not a field: a
            continue  # field named like a type (a link's or a work_result's ``observation``) is kept
        after_index = False
        out += f".{part}" if out else str(part)
    return out or "$"
