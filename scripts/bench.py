"""``make bench``: every benchmark section against PostgreSQL; the last line is one JSON object of figures."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.context import BenchContext

SECTIONS = ["commit", "replay", "dispatch", "http"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one round: checks that it runs")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", action="append", choices=SECTIONS, help="run only these sections")
    args = parser.parse_args()
    ctx = BenchContext(
        postgres_url=os.environ.get("CASEBOARD_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"),
        redis_url=os.environ.get("CASEBOARD_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"),
        rounds=1 if args.quick else args.rounds,
        quick=args.quick,
    )
    figures: dict[str, float] = {}
    for name in args.only or SECTIONS:
        print(f"== {name}", flush=True)
        section = importlib.import_module(f"benchmarks.{name}")
        figures.update(section.run(ctx))
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
