"""The OpenAPI document the server serves at ``/openapi.json``: FastAPI's, completed with what the routes'
declarations cannot say by themselves, in one place (docs/adr/0173-the-schema-says-what-the-server-does.md).

FastAPI builds the document from the routes' parameters and models. ``complete`` then adds, for every
operation alike:

- text without control characters: every string a query parameter, a header or a request body may carry
  (an object's keys included) is declared with ``NO_CONTROL``, the pattern of what ``caseboard/domain/text.py``
  lets in (ADR 0140: NUL and the other C0 controls but tab, line feed and carriage return are refused at the
  one parse path, with ``invalid`` and the field). A string already bound by a pattern, an enumeration or a
  format keeps its own;
- the registered reducers: a ``reducer`` query parameter is one of their names (an enumeration read from the
  registry when the document is built, so another distribution's reducer is listed too);
- a note in the document's description of the rules no JSON Schema can state, which the server refuses with
  422 ``invalid`` or ``unknown_reference`` naming the field (a version past the head, a body's
  ``workspace_id`` that is not the path's, an integer written with a fraction, an excerpt's range, an id that
  must exist).

The event streams' per-event schemas (``COMMIT_EVENTS``, ``LIST_EVENTS``) are declared by their routes from
here: in Open API 3.1 an event stream's ``schema`` describes one event (``event``, ``id``, ``data``, ``retry``),
its ``data`` a JSON document.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from caseboard.domain.text import REFUSED


def _ranges(characters: str) -> str:
    """``characters`` as the ranges of a regular expression's class, each written ``\\uXXXX``."""
    codes = sorted(ord(char) for char in characters)
    parts: list[str] = []
    start = previous = codes[0]
    for code in [*codes[1:], -1]:
        if code != previous + 1:
            parts.append(f"\\u{start:04x}" if start == previous else f"\\u{start:04x}-\\u{previous:04x}")
            start = code
        previous = code
    return "".join(parts)


NO_CONTROL = f"^[^{_ranges(REFUSED)}]*$"
"""A string holding none of the control characters caseboard refuses (``caseboard/domain/text.py``):
``^[^\\u0000-\\u0008\\u000b-\\u000c\\u000e-\\u001f]*$``."""

FREE_JSON = "FreeJson"
"""The component of a free-form JSON value (an ``author``, an alert's ``annotations``): any JSON value whose
strings and keys hold no refused control character."""

RULES_NO_SCHEMA_STATES = """

Some rules depend on the stored state or on two values at once, which no JSON Schema can state; the server
refuses a request that breaks one with 422 and names the field (docs/adr/0173):

- a `version` (or `to`, `from`) past the workspace's head, or `from` after `to`: `invalid` (ADR 0030);
- a contribution body whose `workspace_id` is not the path's: `invalid`, field `workspace_id`;
- an integer written with a fraction (`2.0`): `invalid` (bodies are validated strictly, ADR 0045);
- an excerpt naming both or neither of `lines` and `bytes`, a range `A-B` with `B` before `A`, or one past the
  artifact's end: `invalid`, field `lines` or `bytes`;
- an id that must exist (an item a contribution refers to, a cited artifact): `unknown_reference`;
- an alert whose labels map to no tenant's workspace rules: `invalid` (docs/pilot.md).
"""

SSE_DATA: dict[str, Any] = {"type": "string", "contentMediaType": "application/json"}
END_EVENT: dict[str, Any] = {
    "type": "object",
    "description": "the stream's last event: why it ended, and the version to resume after",
    "properties": {
        "event": {"const": "end"},
        "data": {
            **SSE_DATA,
            "contentSchema": {
                "type": "object",
                "required": ["reason", "next_after"],
                "properties": {
                    "reason": {"enum": ["timeout", "revoked", "unavailable", "tampered"]},
                    "next_after": {"type": "integer", "minimum": 0},
                },
            },
        },
    },
    "required": ["event", "data"],
}
COMMIT_EVENT: dict[str, Any] = {
    "type": "object",
    "description": "one commit; its id is the workspace version (send it back as Last-Event-ID to resume)",
    "properties": {
        "event": {"const": "commit"},
        "id": {"type": "string", "pattern": "^[0-9]+$"},
        "data": {
            **SSE_DATA,
            "contentSchema": {
                "type": "object",
                "required": ["workspace_id", "workspace_version", "at", "author", "items"],
                "properties": {
                    "workspace_id": {"type": "string"},
                    "workspace_version": {"type": "integer", "minimum": 1},
                    "at": {"type": "string"},
                    "author": {"type": "string"},
                    "items": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
    "required": ["event", "id", "data"],
}
LIST_EVENT: dict[str, Any] = {
    "type": "object",
    "description": "the console's list, as GET /workspaces answers it",
    "properties": {
        "event": {"const": "list"},
        "data": {**SSE_DATA, "contentSchema": {"$ref": "#/components/schemas/WorkspaceList"}},
    },
    "required": ["event", "data"],
}
RETRY_ONLY: dict[str, Any] = {
    "type": "object",
    "description": "the reconnection delay the stream opens with (no data)",
    "properties": {"retry": {"type": "integer"}},
    "not": {"required": ["data"]},
}


def _event_stream(description: str, *events: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    schema = {"oneOf": [*events, RETRY_ONLY]}
    return {200: {"description": description, "content": {"text/event-stream": {"schema": schema}}}}


COMMIT_EVENTS = _event_stream(
    "`commit` events (id = workspace version), then one `end` event (`reason`: `timeout`, `revoked` once the key "
    "is revoked, `unavailable`, or `tampered`; `next_after`: where to resume)",
    COMMIT_EVENT,
    END_EVENT,
)
LIST_EVENTS = _event_stream(
    "a `list` event at once and whenever a workspace of the tenant moves, then one `end` event",
    LIST_EVENT,
    END_EVENT,
)


def complete(document: dict[str, Any], reducers: Iterable[str]) -> dict[str, Any]:
    """``document`` (FastAPI's) with the declarations of the module's docstring, changed in place."""
    names = sorted(reducers)
    info = document.setdefault("info", {})
    info["description"] = info.get("description", "") + RULES_NO_SCHEMA_STATES
    components = document.setdefault("components", {}).setdefault("schemas", {})
    for operation in _operations(document):
        for parameter in operation.get("parameters", []):
            if parameter.get("in") not in ("query", "header", "cookie"):
                continue
            schema = parameter.get("schema", {})
            if parameter.get("in") == "query" and parameter.get("name") == "reducer":
                for option in _options(schema):
                    if option.get("type") == "string":
                        option.pop("maxLength", None)
                        option["enum"] = names
            _without_control(schema)
        for content in operation.get("requestBody", {}).get("content", {}).values():
            _without_control(content.get("schema", {}))
    seen: set[str] = set()
    pending = [name for name in _references(_request_bodies(document))]
    while pending:
        name = pending.pop()
        if name in seen or name not in components:
            continue
        seen.add(name)
        _without_control(components[name])
        pending.extend(_references(components[name]))
    if any(_is_free(schema) for schema in _all_schemas(components, seen)):
        components[FREE_JSON] = {
            "description": "any JSON value whose strings and keys hold no refused control character",
            "anyOf": [
                {"type": "string", "pattern": NO_CONTROL},
                {"type": ["number", "boolean", "null"]},
                {"type": "array", "items": {"$ref": f"#/components/schemas/{FREE_JSON}"}},
                {
                    "type": "object",
                    "propertyNames": {"pattern": NO_CONTROL},
                    "additionalProperties": {"$ref": f"#/components/schemas/{FREE_JSON}"},
                },
            ],
        }
        for schema in _all_schemas(components, seen):
            _free_values(schema)
    return document


def _operations(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for item in document.get("paths", {}).values():
        for method, operation in item.items():
            if method in ("get", "put", "post", "delete", "patch", "head", "options") and isinstance(operation, dict):
                yield operation


def _request_bodies(document: dict[str, Any]) -> list[Any]:
    return [operation.get("requestBody", {}) for operation in _operations(document)]


def _references(value: Any) -> Iterator[str]:
    """The component names ``value`` refers to (``#/components/schemas/<name>``), at any depth."""
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            yield ref.rsplit("/", 1)[1]
        for inner in value.values():
            yield from _references(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _references(inner)


def _options(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """A schema's alternatives (``anyOf``/``oneOf``), or the schema itself."""
    options = schema.get("anyOf") or schema.get("oneOf")
    return [option for option in options if isinstance(option, dict)] if options else [schema]


SUBSCHEMAS = ("items", "additionalProperties", "contains")
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _walk(schema: Any) -> Iterator[dict[str, Any]]:
    """``schema`` and every schema inside it, references not followed."""
    if not isinstance(schema, dict):
        return
    yield schema
    for key in SUBSCHEMAS:
        yield from _walk(schema.get(key))
    for key in SCHEMA_LISTS:
        for inner in schema.get(key) or ():
            yield from _walk(inner)
    for inner in (schema.get("properties") or {}).values():
        yield from _walk(inner)
    for inner in (schema.get("$defs") or {}).values():
        yield from _walk(inner)


def _is_text(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return (kind == "string" or (isinstance(kind, list) and "string" in kind)) and not (
        {"pattern", "enum", "const", "format", "contentMediaType"} & set(schema)
    )


def _without_control(schema: Any) -> None:
    for inner in _walk(schema):
        if _is_text(inner):
            inner["pattern"] = NO_CONTROL
        keys = inner.get("patternProperties")
        if isinstance(keys, dict) and len(keys) == 1 and "additionalProperties" not in inner:
            # a map whose keys are checked by a pattern (pydantic's ``dict[Id, ...]``): no other key is taken
            inner["propertyNames"] = {**inner.get("propertyNames", {}), "pattern": next(iter(keys))}
        if inner.get("type") == "object" and "propertyNames" not in inner and inner.get("additionalProperties"):
            inner["propertyNames"] = {"pattern": NO_CONTROL}


def _all_schemas(components: dict[str, Any], names: set[str]) -> Iterator[dict[str, Any]]:
    for name in sorted(names):
        yield from _walk(components[name])


def _is_free(schema: dict[str, Any]) -> bool:
    """A schema that takes any JSON value: ``{}``, or an object's ``additionalProperties: true``."""
    return schema.get("type") == "object" and schema.get("additionalProperties") is True


def _free_values(schema: dict[str, Any]) -> None:
    if _is_free(schema):
        schema["additionalProperties"] = {"$ref": f"#/components/schemas/{FREE_JSON}"}
        schema["propertyNames"] = {"pattern": NO_CONTROL}
