"""The submit route's fast path reads a body as JSON by the route's own rule, FastAPI's with its strict content
type (``fastapi/routing.py``: the type parsed by ``email.message``, then ``application`` with the subtype
``json`` or ending ``+json``), so no body is taken by one and refused by the other."""

from __future__ import annotations

import email.message

from hypothesis import given, settings
from hypothesis import strategies as st

from caseboard.api.fast_path import read_as_json

PIECES = ["application", "APPLICATION", "text", "/", "json", "JSON", "+json", "vnd.x", ";", " ", "\t", '"', "=", ","]


def fastapi_reads_as_json(content_type: str) -> bool:
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=7).map("".join))
def test_the_fast_path_reads_a_body_as_json_exactly_when_the_route_does(content_type: str) -> None:
    assert read_as_json(content_type.encode("latin-1")) == fastapi_reads_as_json(content_type)


def test_the_types_a_client_sends() -> None:
    assert read_as_json(b"application/json")
    assert read_as_json(b"Application/JSON; charset=utf-8")
    assert read_as_json(b"application/vnd.caseboard+json")
    assert not read_as_json(b"")
    assert not read_as_json(b"text/x+json")
    assert not read_as_json(b"application/x-www-form-urlencoded")
    assert not read_as_json(b"application/x/+json")
