"""``cli_help_s``: the median wall time of ``python -m caseboard --help`` in a fresh process (goal under 0.5 s).

Parsing imports only the module of the command named (``caseboard/cli/main.py``'s table of commands), so the
help and a mistake in the arguments cost the interpreter's start and argparse, not the API, MCP, the agents
and the drivers. Each run is a process of its own, as a user's is; ``--quick`` runs three.
"""

from __future__ import annotations

import subprocess
import sys
import time

from benchmarks.context import BenchContext, median


def once() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "caseboard", "--help"], capture_output=True, check=True, timeout=60)
    return time.perf_counter() - started


def run(ctx: BenchContext) -> dict[str, float]:
    runs = 3 if ctx.quick else max(7, ctx.rounds)
    times = [once() for _ in range(runs)]
    print(f"caseboard --help: {', '.join(f'{t:.3f}' for t in times)} s", flush=True)
    return {"cli_help_s": median(times)}
