"""Cited excerpts: a range of a stored artifact, and what the artifact store found for it at commit (pure).

A citation names an artifact by the SHA-256 of its bytes and one range of it: ``lines`` A-B (1-based, both
ends included, as ``sed -n A,Bp``) or ``bytes`` A-B (0-based, both ends included, as an HTTP ``Range``).
Its stored form is one string, ``sha256:<hex>#lines=A-B`` or ``sha256:<hex>#bytes=A-B`` (docs/adr/0081).

The coordinator decides on ``CitationFacts`` that the service layer resolved through the store before
deciding; ``decide`` itself reads no store (``CitationResolver`` is the seam).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

ARTIFACT_ID = r"sha256:[0-9a-f]{64}"
ARTIFACT_ID_RE = re.compile(ARTIFACT_ID)
CITATION_RE = re.compile(rf"({ARTIFACT_ID})#(lines|bytes)=([0-9]+)-([0-9]+)")
"""Whatever the numbers' size: a range past an artifact's end is refused against the artifact, never taken for a
free string (docs/adr/0081, its amendment)."""
CITING_RE = re.compile(rf"{ARTIFACT_ID}#")
"""What only a citation starts with: an artifact's id and a ``#``."""
CITATION_PREFIX = "sha256:"
MAX_EXCERPT_BYTES = 1024 * 1024
"""A cited excerpt is at most this long: a citation points at the evidence, it does not carry a log bundle."""
SPAN_RE = re.compile(r"([0-9]{1,15})-([0-9]{1,15})")

Unit = Literal["lines", "bytes"]


@dataclass(frozen=True, slots=True)
class Span:
    """A range of an artifact: ``lines`` first-last from 1, or ``bytes`` first-last from 0, both ends included."""

    unit: Unit
    first: int
    last: int

    @classmethod
    def parse(cls, unit: Unit, text: str) -> Span:
        """``A-B`` as given on a command line or in a query; ``ValueError`` with what is expected otherwise."""
        match = SPAN_RE.fullmatch(text.strip())
        if match is None:
            raise ValueError(f"{unit} range {text!r} is not A-B (two whole numbers, e.g. 3-7)")
        return cls.checked(unit, int(match[1]), int(match[2]))

    @classmethod
    def checked(cls, unit: Unit, first: int, last: int) -> Span:
        lowest = 1 if unit == "lines" else 0
        if first < lowest or last < first:
            raise ValueError(
                f"{unit} range {first}-{last}: expected A-B with {lowest} <= A <= B "
                f"({'lines count from 1' if unit == 'lines' else 'bytes count from 0'}, both ends included)"
            )
        return cls(unit, first, last)

    def text(self) -> str:
        return f"{self.first}-{self.last}"

    def inside(self, size: int, lines: int) -> bool:
        return self.last <= (lines if self.unit == "lines" else size - 1)

    def extent(self, size: int, lines: int) -> str:
        """What the artifact holds, in the unit of this span, for a message."""
        if self.unit == "lines":
            return f"it has {lines} line{'s' if lines != 1 else ''} (1-{lines})" if lines else "it is empty"
        return f"it has {size} bytes (0-{size - 1})" if size else "it is empty"


@dataclass(frozen=True, slots=True)
class Cited:
    """A parsed citation: an artifact and one span of it."""

    artifact: str
    span: Span

    @property
    def ref(self) -> str:
        return f"{self.artifact}#{self.span.unit}={self.span.text()}"

    def record(self) -> dict[str, object]:
        return {"artifact": self.artifact, self.span.unit: [self.span.first, self.span.last]}


def cites(ref: str) -> bool:
    """Whether ``ref`` is meant as a citation (an artifact's id, then ``#``): it is one, or it is refused."""
    return CITING_RE.match(ref) is not None


def parse_citation(ref: str | None) -> Cited | None:
    """The citation a stored ``evidence_ref`` string holds, or None for any other reference (today's free
    strings stay what they were)."""
    if ref is None or not ref.startswith(CITATION_PREFIX):
        return None
    match = CITATION_RE.fullmatch(ref)
    if match is None:
        return None
    try:
        return Cited(match[1], Span.checked(match[2], int(match[3]), int(match[4])))  # type: ignore[arg-type]
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class CitationFacts:
    """What the store holds for a citation, in the workspace's tenant: the artifact's size and line count,
    and, when the span is inside it and at most ``MAX_EXCERPT_BYTES`` long, the excerpt's length and SHA-256
    (``excerpt_sha256`` None otherwise; ``excerpt_length`` is then ``MAX_EXCERPT_BYTES + 1`` for a span too
    long, 0 for one outside)."""

    size: int
    lines: int
    excerpt_length: int
    excerpt_sha256: str | None


class CitationResolver(Protocol):
    """The artifact store as the coordinator sees it."""

    def resolve_all(self, tenant_id: str, cited: Sequence[Cited]) -> list[CitationFacts | None]:
        """The facts of each citation, in order: None when the tenant has no such artifact (or it was removed
        under retention). A contribution's citations are resolved together, in as few reads as the store can."""
        ...
