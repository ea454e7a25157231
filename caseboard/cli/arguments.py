"""Argument types more than one command shares: a value out of range is argparse's one line, exit 2."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def whole_number(noun: str, most: int) -> Callable[[str], int]:
    """The type of a count of ``noun`` given on the command line: a whole number from 1 to ``most``."""

    def parse(text: str) -> int:
        if not text.strip().isdigit() or not 1 <= int(text) <= most:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of {noun} (a whole number from 1 to {most})")
        return int(text)

    return parse
