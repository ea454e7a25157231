"""The benchmarks' PostgreSQL CPU per write is each process's own growth, never below zero."""

from __future__ import annotations

import os

from benchmarks.context import postgres_cpu_s


def test_a_backend_that_ended_meanwhile_takes_nothing_off_and_one_that_began_counts_from_nothing() -> None:
    tick = 1 / os.sysconf("SC_CLK_TCK")
    before = {10: 500, 11: 40, 12: 7}  # 11, another client's backend, ends; 13 begins
    after = {10: 503, 12: 7, 13: 2}
    assert postgres_cpu_s(before, after) == 5 * tick
    assert postgres_cpu_s(before, {12: 3}) == 3 * tick  # an id taken again by a new process: all of its own
    assert postgres_cpu_s({}, {}) == 0
