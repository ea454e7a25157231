"""A workspace's model budget: calls and tokens per investigation cycle, charged from what the ledger holds.

The allowance is ``max_investigation_cycles`` times the per-cycle figures (``CASEBOARD_MODEL_CALLS_PER_CYCLE``,
``CASEBOARD_MODEL_TOKENS_PER_CYCLE``): the cycle is the unit every component charges its work against
(DESIGN.md §1), and a ``reopen`` with a new budget raises it. What was spent is read from the ledger's
judgments (one call each, and the tokens their output records), so every participant in every process
charges the same budget, and a restarted participant does not start from zero (docs/adr/0112).

Only caseboard's own calls are charged: the judgments its model participants' principals committed
(``Budget.principals``), not those another participant submits about its own model, whatever usage they claim.
The usage a model reports is clamped when it is recorded (``clamped``): never negative, never more than the
request's bound on the reply plus the prompt's size in bytes (docs/adr/0112, its amendment).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from caseboard.domain.commit import Commit


@dataclass(frozen=True)
class Spent:
    calls: int = 0
    tokens: int = 0


PROMPT_OVERHEAD_TOKENS = 64
"""Tokens a chat template may add to a prompt beyond one per byte of its text (role markers, separators)."""


@dataclass(frozen=True)
class Budget:
    calls_per_cycle: int
    tokens_per_cycle: int
    principals: frozenset[str] = field(default_factory=frozenset)
    """The principals of caseboard's other model participants: their judgments are charged with a participant's
    own (``ModelParticipant`` adds its principal)."""

    def allowance(self, cycles: int) -> Spent:
        return Spent(self.calls_per_cycle * cycles, self.tokens_per_cycle * cycles)

    def left(self, cycles: int, spent: Spent) -> Spent:
        allowed = self.allowance(cycles)
        return Spent(max(0, allowed.calls - spent.calls), max(0, allowed.tokens - spent.tokens))


def spent(commits: Iterable[Commit], principals: frozenset[str]) -> Spent:
    """The calls and tokens the judgments of ``commits`` by ``principals`` record (a negative count, recorded
    before usage was clamped, as 0)."""
    calls = tokens = 0
    for commit in commits:
        if commit.author.principal not in principals:
            continue
        for item in commit.items:
            if item.type == "judgment":
                calls += 1
                usage = item.output.get("usage")
                if isinstance(usage, dict) and isinstance(usage.get("total_tokens"), int):
                    tokens += max(0, usage["total_tokens"])
    return Spent(calls, tokens)


def clamped(usage: dict[str, int], max_tokens: int, prompt_bytes: int) -> dict[str, int]:
    """``usage`` as a model reported it, held to what the call could have used: each count at least 0, the
    prompt's at most its bytes (plus a template's overhead), the reply's at most ``max_tokens``, the total at
    most their sum."""
    prompt = min(max(0, usage.get("prompt_tokens", 0)), prompt_bytes + PROMPT_OVERHEAD_TOKENS)
    completion = min(max(0, usage.get("completion_tokens", 0)), max_tokens)
    total = min(max(0, usage.get("total_tokens", 0)), prompt_bytes + PROMPT_OVERHEAD_TOKENS + max_tokens)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}
