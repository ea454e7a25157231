"""``make bench``: every benchmark section against PostgreSQL; the last line is one JSON object of figures."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.context import BenchContext

SECTIONS = ["commit", "replay", "dispatch", "http", "mcp", "artifacts", "agent", "report", "scale"]
SECTIONS += ["console"]  # the operator's console (docs/console.md)
SECTIONS += ["pilot"]  # the pilot loop's two ends (docs/pilot.md)
SECTIONS.append("sources")  # source_query_overhead_ms (docs/sources.md)
SECTIONS.append("cli")  # cli_help_s: caseboard --help in a fresh process (docs/benchmarks.md)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one round: checks that it runs")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", action="append", choices=SECTIONS, help="run only these sections")
    parser.add_argument("--section", choices=SECTIONS, help=argparse.SUPPRESS)  # one section, in this process
    args = parser.parse_args()
    if args.section:
        ctx = BenchContext(
            postgres_url=os.environ.get("CASEBOARD_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"),
            redis_url=os.environ.get("CASEBOARD_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"),
            rounds=1 if args.quick else args.rounds,
            quick=args.quick,
        )
        figures = importlib.import_module(f"benchmarks.{args.section}").run(ctx)
        print(json.dumps(figures), flush=True)
        return 0
    figures = {}
    for name in args.only or SECTIONS:
        print(f"== {name}", flush=True)
        figures.update(run_section(name, args.quick, args.rounds))
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))
    return 0


def run_section(name: str, quick: bool, rounds: int) -> dict[str, float]:
    """One section in a process of its own, as a server or a command would be: it configures logging once,
    and nothing an earlier section left behind (threads, caches, garbage) weighs on it. Its output is passed
    through; its last line is its figures."""
    command = [sys.executable, __file__, "--section", name, "--rounds", str(rounds), *(["--quick"] if quick else [])]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        last = ""
        for line in process.stdout:
            if last:
                print(last, end="", flush=True)
            last = line
    if process.returncode != 0:
        raise SystemExit(f"bench: the {name} section failed (exit status {process.returncode})")
    figures: dict[str, float] = json.loads(last)
    return figures


if __name__ == "__main__":
    raise SystemExit(main())
