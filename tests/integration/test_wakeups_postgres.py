"""The commit notifier: a burst of commits gives few NOTIFYs, and the last commit of a burst is announced."""

from __future__ import annotations

import time

import pytest

from caseboard.dispatcher.wakeup import CommitListener, CommitNotifier

pytestmark = pytest.mark.postgres


def notifications(listener: CommitListener, within_s: float) -> int:
    count, deadline = 0, time.monotonic() + within_s
    while (left := deadline - time.monotonic()) > 0:
        count += listener.wait(timeout=left)
    return count


def test_a_burst_is_announced_by_few_notifies_and_a_commit_after_it_by_one_more(postgres_url: str) -> None:
    listener = CommitListener(postgres_url)
    notifier = CommitNotifier(postgres_url)
    try:
        for _ in range(1000):
            notifier.wake()
        burst = notifications(listener, within_s=0.5)
        assert 1 <= burst <= 1 + 0.5 / CommitNotifier.MIN_GAP_S
        notifier.wake()  # a lone commit after the burst
        assert notifications(listener, within_s=0.5) == 1
        time.sleep(0.05)
        notifier.wake()  # and one long after
        started = time.monotonic()
        assert listener.wait(timeout=2.0)
        assert time.monotonic() - started < 0.5
    finally:
        notifier.close()
        listener.close()
