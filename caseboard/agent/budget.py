"""A workspace's model budget: calls and tokens per investigation cycle, charged from what the ledger holds.

The allowance is ``max_investigation_cycles`` times the per-cycle figures (``CASEBOARD_MODEL_CALLS_PER_CYCLE``,
``CASEBOARD_MODEL_TOKENS_PER_CYCLE``): the cycle is the unit every component charges its work against
(DESIGN.md §1), and a ``reopen`` with a new budget raises it. What was spent is read from the ledger's
judgments (one call each, and the tokens their output records), so every participant in every process
charges the same budget, and a restarted participant does not start from zero (docs/adr/0112).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from caseboard.domain.commit import Commit


@dataclass(frozen=True)
class Spent:
    calls: int = 0
    tokens: int = 0


@dataclass(frozen=True)
class Budget:
    calls_per_cycle: int
    tokens_per_cycle: int

    def allowance(self, cycles: int) -> Spent:
        return Spent(self.calls_per_cycle * cycles, self.tokens_per_cycle * cycles)

    def left(self, cycles: int, spent: Spent) -> Spent:
        allowed = self.allowance(cycles)
        return Spent(max(0, allowed.calls - spent.calls), max(0, allowed.tokens - spent.tokens))


def spent(commits: Iterable[Commit]) -> Spent:
    """The calls and tokens the judgments of ``commits`` record."""
    calls = tokens = 0
    for commit in commits:
        for item in commit.items:
            if item.type == "judgment":
                calls += 1
                usage = item.output.get("usage")
                if isinstance(usage, dict) and isinstance(usage.get("total_tokens"), int):
                    tokens += usage["total_tokens"]
    return Spent(calls, tokens)
