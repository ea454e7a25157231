"""Text caseboard will not take in: NUL and the other C0 control characters but tab, line feed and carriage
return (docs/adr/0140-control-characters.md).

PostgreSQL cannot store NUL in a ``text`` column, and the other C0 controls (an ESC starting a terminal
sequence, a backspace) have no place in a statement, an id or a header: they are refused where text comes in
(``coordinator/parse.py`` for bodies, ``api/fast_path.py`` for query strings and headers) and escaped, with a
warning, where a store meets them in what was committed before (``knowledge/writer.py``).

A JSON body can only carry them escaped (pydantic refuses them raw, and lone surrogates too): ``BODY`` finds
``\\u0000``-``\\u001f`` escapes but ``\\t``, ``\\n``, ``\\r`` in one pass over the raw bytes; ``escaped_control``
tells a real escape from an escaped backslash followed by ``u00..``.
"""

from __future__ import annotations

import re

REFUSED = "".join(chr(code) for code in range(0x20) if chr(code) not in "\t\n\r")
"""The characters refused: C0 controls but tab, line feed and carriage return."""
CONTROL = re.compile(f"[{re.escape(REFUSED)}]")
BODY = re.compile(rb"\\u00(?:0[0-8bBcCeEfF]|1[0-9a-fA-F])")
"""A JSON escape of a refused character (perhaps preceded by an escaped backslash: see ``escaped_control``)."""
QUERY = re.compile(rb"%(?:0[0-8bBcCeEfF]|1[0-9a-fA-F])|[\x00-\x08\x0b\x0c\x0e-\x1f]")
"""A refused character in a raw query string, percent-encoded or not."""
RAW = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


FIELD_VALUE_REFUSED = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
"""What no HTTP field value may carry (RFC 9110): a control character but tab. A secret sent in a header is
checked against it before it is sent: the HTTP client's own refusal would quote the header, secret included."""


def escaped_control(body: bytes) -> bool:
    """Whether JSON ``body`` escapes a refused character in one of its strings (keys included)."""
    for found in BODY.finditer(body):
        before = found.start() - 1
        while before >= 0 and body[before] == 0x5C:  # the backslashes just before this one
            before -= 1
        if (found.start() - 1 - before) % 2 == 0:  # ``\\u0000`` is a backslash and the text "u0000"
            return True
    return False


def control_in(text: str) -> bool:
    return CONTROL.search(text) is not None


def visible(text: str) -> str:
    """``text`` with each refused character written as its escape (``\\u0000``): storable and readable."""
    return CONTROL.sub(lambda found: f"\\u{ord(found[0]):04x}", text)


def describe(text: str) -> str:
    """The first refused character of ``text``, as a message names it."""
    found = CONTROL.search(text)
    return "" if found is None else f"U+{ord(found[0]):04X}"
