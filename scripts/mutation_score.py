"""The mutation score per module of the last ``mutmut run`` (``make mutants``): killed / (killed + survived),
from mutmut's own records under ``mutants/``; timeouts count as killed, mutants no selected test covers are
listed apart. ``--survivors`` lists each surviving mutant's name (``mutmut show NAME`` prints its diff)."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

KILLED = {1, 3, 24, 36, -24, 152, 255, 37}  # test failure, pytest error, timeouts, caught by the type check
SURVIVED = {0}
NO_TESTS = {5, 33}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", default="mutants", help="mutmut's folder (default: ./mutants)")
    parser.add_argument("--survivors", action="store_true", help="list the surviving mutants")
    args = parser.parse_args()
    folder = Path(args.mutants)
    metas = sorted(folder.rglob("*.py.meta"))
    if not metas:
        sys.stderr.write(f"mutation_score: no mutmut results under {folder}: run `make mutants` first\n")
        return 2
    rows, survivors = [], []
    totals: Counter[str] = Counter()
    for meta in metas:
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        if not codes:
            continue
        counts = Counter(
            "killed"
            if code in KILLED
            else "survived"
            if code in SURVIVED
            else "no tests"
            if code in NO_TESTS
            else "not checked"
            if code is None
            else "other"
            for code in codes.values()
        )
        survivors += [name for name, code in codes.items() if code in SURVIVED]
        totals.update(counts)
        module = str(meta.relative_to(folder))[: -len(".meta")]
        rows.append((module, counts))
    print(f"{'module':<52} {'killed':>7} {'survived':>9} {'no tests':>9} {'score':>7}")
    for module, counts in rows:
        judged = counts["killed"] + counts["survived"]
        score = f"{counts['killed'] / judged:.1%}" if judged else "-"
        print(f"{module:<52} {counts['killed']:>7} {counts['survived']:>9} {counts['no tests']:>9} {score:>7}")
    judged = totals["killed"] + totals["survived"]
    print(
        f"{'all':<52} {totals['killed']:>7} {totals['survived']:>9} {totals['no tests']:>9} "
        f"{totals['killed'] / judged:.1%}"
        if judged
        else "no mutant was judged"
    )
    if totals["not checked"] or totals["other"]:
        print(f"not checked: {totals['not checked']}, other outcomes: {totals['other']}")
    if args.survivors:
        print("\n".join(["", "survivors:", *survivors]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
