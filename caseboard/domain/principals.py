"""When two principals are the same: one comparison for every rule that asks (issue 33, rule 3).

A principal is compared after Unicode NFKC normalisation and case folding, so ``Planner-1`` and ``planner-1``
(or a full-width spelling of it, where a transport lets one through) are one participant: whoever holds a
lease, whoever authored a claim, whoever ran a check. Only the comparison changes: a principal is recorded
and shown as it was written, and what the ledger stores (the idempotency digest, DESIGN.md §3) is unchanged.
"""

from __future__ import annotations

import unicodedata


def principal_key(principal: str) -> str:
    """The form two principals are compared in: NFKC, case-folded, NFKC again (case folding can undo NFKC)."""
    if principal.isascii():
        return principal.lower()
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", principal).casefold())


def same_principal(first: str | None, second: str | None) -> bool:
    """Whether two principals name the same participant (None is nobody, and never the same as anyone)."""
    return first is not None and second is not None and principal_key(first) == principal_key(second)
