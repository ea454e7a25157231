"""CPU instructions per ``Coordinator.submit``, counted by valgrind: a figure that machine noise does not move.

Timings on this shared two-core machine move by 10-30 % between runs, so a change worth 3 % of a commit's CPU
cannot be seen in ``make bench``. This runs the same one-observation commits as the benchmark on the
in-memory ledger (no database: the Python of the commit path alone) under ``valgrind --tool=callgrind``,
once with no measured commits and once with ``--commits`` of them, and prints the difference per commit.
The same tree gives the same count to within a fraction of a percent, whatever else the machine is doing.

    .venv/bin/python scripts/instructions.py            # ~1 minute
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORKLOAD = """
import sys
sys.path.insert(0, {root!r})
from benchmarks.workload import accept, log_to_devnull, observations, open_workspace, submit_all
from caseboard.coordinator import Coordinator
from caseboard.ledger import open_ledger
log_to_devnull()
coordinator = Coordinator(open_ledger("memory://"))
accept(coordinator, open_workspace("ws"))
commits = observations("ws", 1, 200 + {built})  # built in both runs: only submitting differs
submit_all(coordinator, commits[:200])  # warm: caches, lazy imports
submit_all(coordinator, commits[200 : 200 + {count}])
"""


def instructions(count: int, built: int) -> int:
    """Instructions of the whole process, with ``count`` of ``built`` contributions submitted after the
    warm-up."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            WORKLOAD.format(root=str(ROOT), count=count, built=built),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"instructions: valgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=500, help="measured commits (default 500)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    with ThreadPoolExecutor(2) as pool:
        base, measured = pool.map(instructions, [0, args.commits], [args.commits] * 2)
    print(f"{(measured - base) / args.commits:,.0f} instructions per commit (in-memory ledger, {args.commits} commits)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
