"""Regenerate the evaluation corpus: ``python scripts/make_evaluation_corpus.py [--check]``.

Each scenario declared in ``corpus/evaluation/scenarios.json`` is built by its template
(``caseboard.evaluation.generate``) into ``corpus/evaluation/incidents/ID.json``. The build is pure, so the
output is byte for byte the same each time; ``--check`` exits 1 when a committed incident differs or is
missing, or when an incident has no scenario.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from caseboard.evaluation.generate import build, render

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus" / "evaluation"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed incidents, write nothing")
    args = parser.parse_args()
    declared = json.loads((CORPUS / "scenarios.json").read_text())["scenarios"]
    folder = CORPUS / "incidents"
    folder.mkdir(exist_ok=True)
    wanted = {f"{scenario['id']}.json": render(build(scenario)) for scenario in declared}
    stale = sorted(
        name for name, text in wanted.items() if not (folder / name).is_file() or (folder / name).read_text() != text
    )
    extra = sorted(path.name for path in folder.glob("*.json") if path.name not in wanted)
    if args.check:
        for name in stale:
            print(f"out of date: corpus/evaluation/incidents/{name}", file=sys.stderr)
        for name in extra:
            print(f"no scenario declares: corpus/evaluation/incidents/{name}", file=sys.stderr)
        return 1 if stale or extra else 0
    for name in stale:
        (folder / name).write_text(wanted[name])
    for name in extra:
        (folder / name).unlink()
    print(f"{len(wanted)} incidents, {len(stale)} written, {len(extra)} removed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
