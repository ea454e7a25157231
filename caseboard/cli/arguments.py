"""Argument types more than one command shares: a value out of range is argparse's one line, exit 2."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from pydantic import TypeAdapter, ValidationError

from caseboard.domain.citations import ARTIFACT_ID_RE
from caseboard.domain.items import Id, WorkspaceId
from caseboard.domain.text import control_in, describe

MAX_SECONDS = 3600.0


def whole_number(noun: str, most: int) -> Callable[[str], int]:
    """The type of a count of ``noun`` given on the command line: a whole number from 1 to ``most``."""

    def parse(text: str) -> int:
        if not text.strip().isdigit() or not 1 <= int(text) <= most:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of {noun} (a whole number from 1 to {most})")
        return int(text)

    return parse


def seconds(text: str) -> float:
    """A loop's interval or a wait, given on the command line: seconds, more than 0 and at most an hour (0 or
    less, or not a number, would spin a core; an infinite one cannot be waited for)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (more than 0, at most {MAX_SECONDS:g})")
    return value


def identifier(noun: str, *, workspace: bool = False) -> Callable[[str], str]:
    """The type of an id given on the command line, checked as the contract checks it (``Id``, or
    ``WorkspaceId`` with ``workspace``): a tenant or principal that no key or workspace can have would be acted
    for, or stored under, in vain."""
    adapter: TypeAdapter[str] = TypeAdapter(WorkspaceId if workspace else Id)
    allowed = "._:@- (no '/')" if workspace else "._:/@-"

    def parse(text: str) -> str:
        try:
            return adapter.validate_python(text)
        except ValidationError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a {noun}: letters, digits and {allowed}, at most 128, beginning with a letter or "
                "digit"
            ) from None

    return parse


def text(noun: str, most: int) -> Callable[[str], str]:
    """The type of a free text given on the command line and stored as it is (a media type, a system's name):
    one character to ``most``, no control character (ADR 0140)."""

    def parse(value: str) -> str:
        if not value or len(value) > most:
            raise argparse.ArgumentTypeError(f"a {noun} is 1 to {most} characters, not {len(value)}")
        if control_in(value):
            raise argparse.ArgumentTypeError(f"a {noun} holds no control character ({describe(value)} in {value!r})")
        return value

    return parse


def artifact_id(value: str) -> str:
    """An artifact's id, as the artifact store names it: ``sha256:`` and the hex digest of its bytes."""
    if ARTIFACT_ID_RE.fullmatch(value) is None:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an artifact id: 'sha256:' and 64 lower-case hexadecimal digits "
            "(caseboard artifacts list shows them)"
        )
    return value


def request_kinds(value: str) -> tuple[str, ...]:
    """A comma list of work request kinds, each an id as a request's ``kind`` is: at least one."""
    kinds = tuple(value.split(","))
    for kind in kinds:
        try:
            request_kind(kind)
        except argparse.ArgumentTypeError as error:
            raise argparse.ArgumentTypeError(f"{value!r} is not a comma list of request kinds: {error}") from None
    return kinds


principal_id = identifier("principal")
"""Who a process or a key contributes as."""
tenant_id = identifier("tenant")
"""The tenant a process acts for, or a key or an artifact belongs to."""
request_kind = identifier("request kind")
"""The kind of work a specialist serves, as a work request names it."""
