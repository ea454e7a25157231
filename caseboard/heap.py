"""How a long-running process treats what it built at startup: out of the garbage collector's reach.

``settle_startup`` is called once by each process that serves or consumes until stopped (``caseboard serve`` and
each of its workers, ``dispatch``, ``worker``, ``agent``, ``specialist``), after startup and before the first
request or notification. ``gc.freeze`` moves every object alive then (modules, the app and its routes, the
cached workspaces) to a permanent generation that collections do not scan, so a full collection walks only what
serving allocated. Unfrozen, a full collection of a server holding 500 event streams paused its event loop for
110-370 ms (``sse_1000_subscribers_p99_ms``, docs/benchmarks.md), and a source specialist's for 6-9 ms
(``source_query_overhead_ms``).
"""

from __future__ import annotations

import gc


def settle_startup() -> None:
    gc.collect()
    gc.freeze()
