"""Text that looks like instructions to a model, found in a contribution's free text.

Entries are data, never instructions. A participant may still write (or copy from a log line or a web page)
text that tries to steer whoever reads the workspace next: "ignore previous instructions", "you are now",
"system:", a tool-call payload. Such text is not refused, since it may be the very evidence under study;
it is recorded with the item and flagged, so that every view that shows it can say so.

``suspicious_text(item)`` is pure and deterministic: the same item always gives the same signals. The
coordinator records them in the item's decision at commit time (``"suspicious": [...]``), so a later
change of these patterns never rewrites how an old entry was flagged.

Look-alike spellings are read as what they look like (issue 33): text that is not ASCII is folded before the
patterns see it (``fold``): NFKC (full-width and compatibility forms), format characters such as zero-width
spaces removed, then each remaining character that Unicode's confusables table (``confusable_homoglyphs``,
UTS #39 data) maps to an ASCII look-alike replaced by it, so a Cyrillic ``\u0435`` reads as ``e``. The detection rate
on a corpus nobody here wrote, and the false positives on the recorded corpus, are in docs/rules-of-evidence.md.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

SIGNALS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        (
            "ignore_instructions",
            r"\b(ignore|disregard|forget|override)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|your|the)\b"
            r"[^.\n]{0,20}\b(instructions?|prompts?|rules|directions|guidelines|context)\b"
            r"|\b(ignore|disregard)\b\s+(all\s+|any\s+|the\s+)?(instructions?|directions|info|information|"
            r"the rest of)\b",
        ),
        (
            "role_change",
            r"\byou are now\b|\bact as (an? |the )?\w+|\bfrom now on,? you\b|\bpretend (to be|you are)\b",
        ),
        (
            "role_marker",
            r"(^|\n)\s*(system|assistant|developer)\s*:|<\|?(system|im_start|im_end)\|?>|\[/?INST\]",
        ),
        (
            "new_instructions",
            r"\b(new|updated|real|my|your) instructions?( are)?\s*:|\bdo not (tell|inform) the (user|operator)\b"
            r"|\bi was instructed\b|\b(just (say|print|output)|stop everything)\b"
            r"|\b(reply|respond|answer) with only\b",
        ),
        (
            "tool_call",
            r"<\s*/?\s*(tool_call|function_call|tool_use|invoke)\b|\"(tool|function)_?call\"\s*:"
            r"|\bcall the \w+ tool\b|\brun (the )?(command|shell)\b",
        ),
        (
            "mode_change",
            r"\b(execution_mode|read_only)\b\s*[:=]|\bdisable (the )?(read[- ]only|safety|guardrails?)\b"
            r"|\bexecution[ _-]?mode\b"
            r"|\b(set|switch|change|turn|put|make|enable)\b[^.\n]{0,40}\b(read[ _-]?write|writable|write mode)\b",
        ),
        (
            "prompt_extraction",
            r"\b(system|initial|starting|original|hidden|your)\s*[_-]?\s*(prompt|instructions?)"
            r"|\bsystem (message|configuration)\b|\binitialization string\b"
            r"|\b(repeat|print|output|show|display|reveal)\b[^.\n]{0,40}\b(instructions?\b|prompt"
            r"|the following|text above|above text|entire conversation)",
        ),
    )
)


ANY_SIGNAL = re.compile("|".join(f"(?:{pattern.pattern})" for _, pattern in SIGNALS), re.IGNORECASE)

KEYWORDS: tuple[str, ...] = (
    *("ignore", "disregard", "forget", "override"),
    *("you are now", "act as", "from now on", "pretend"),
    *("system", "assistant", "developer", "<", "[inst", "[/inst"),
    *("instruction", "do not"),
    *('call"', "call the ", "run command", "run shell", "run the command", "run the shell"),
    *("execution_mode", "read_only", "disable", "execution", "read_write", "read-write", "read write", "writable"),
    *("write mode", "instruct", "just say", "just print", "just output", "stop everything", "with only"),
    *("prompt", "initialization", "the following", "text above", "above text", "entire conversation"),
)
"""What every match of a signal contains, lower-cased: one literal of the signal's first part (one line per
signal). Python's ``re`` tries each branch of ``ANY_SIGNAL`` at every position of the text (~0.2 us per
character); looking for these literals in the lower-cased text is about twenty times cheaper. A test checks
that ``ANY_SIGNAL`` never matches an ASCII text in which ``has_keyword`` finds none; text that is not ASCII
skips it (case folding beyond ASCII is ``re``'s own business)."""


def has_keyword(lowered: str) -> bool:
    return any(map(lowered.__contains__, KEYWORDS))


@functools.cache
def _look_alikes() -> dict[str, str]:
    """Each character the confusables table maps to an ASCII look-alike, and that look-alike (read once)."""
    from confusable_homoglyphs.confusables import confusables_data  # type: ignore[import-untyped]

    table = {}
    for char, homoglyphs in confusables_data.items():
        if char.isascii():
            continue
        ascii_ = next((h["c"] for h in homoglyphs if h["c"].isascii() and h["c"].isprintable()), None)
        if ascii_ is not None:
            table[char] = ascii_
    return table


def fold(text: str) -> str:
    """``text`` as it reads: NFKC, without format characters (zero-width spaces, joiners, direction marks),
    each look-alike of an ASCII character replaced by it. ASCII text is returned as it is."""
    if text.isascii():
        return text
    table = _look_alikes()
    normal = unicodedata.normalize("NFKC", text)
    return "".join(table.get(char, char) for char in normal if char.isascii() or unicodedata.category(char) != "Cf")


def signals_in(text: str) -> list[str]:
    """The names of the signals that ``text`` matches (as it reads: ``fold``), in the order of ``SIGNALS``."""
    text = fold(text)
    if not ANY_SIGNAL.search(text):
        return []
    return [name for name, pattern in SIGNALS if pattern.search(text)]


def suspicious_text(item: BaseModel) -> list[dict[str, Any]]:
    """Every free-text field of an item that looks like instructions: ``[{"field", "signals"}]``."""
    joined = "\n".join(_strings(item, []))
    if joined.isascii() and not has_keyword(joined.lower()):
        return []  # by far the common case: one cheap pass over all of the item's text
    found = []
    for path, text in _texts(item.model_dump(exclude_none=True), ""):
        signals = signals_in(text)
        if signals:
            found.append({"field": path, "signals": signals})
    return found


def _strings(value: Any, out: list[str]) -> list[str]:
    """Every string in an item (its ``type`` included), read off the model without dumping it: the common
    case's one pass."""
    if isinstance(value, BaseModel):
        value = value.__dict__.values()
    elif isinstance(value, dict):
        value = value.values()
    for inner in value:
        if isinstance(inner, str):
            out.append(inner)
        elif isinstance(inner, (BaseModel, dict, list, tuple)):
            _strings(inner, out)
    return out


def _texts(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, inner in value.items():
            if key != "type":
                yield from _texts(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for index, inner in enumerate(value):
            yield from _texts(inner, f"{path}[{index}]")
