"""Regenerate the corpus of recorded incidents: ``python scripts/make_corpus.py [--check]``.

Each ``corpus/scenarios/NAME.jsonl`` is a scenario: contributions, one per line, each with a trusted
timestamp (``at``). A line may carry ``"expect": "<reason>"``: that contribution must be refused with that
reason (and leaves no trace in the ledger); every other line must be accepted. The scenario is played
through the coordinator on an in-memory ledger, then exported to ``corpus/NAME.jsonl``. Trusted timestamps
everywhere make the output byte-for-byte deterministic; ``--check`` fails when a committed export differs.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.errors import Refusal
from caseboard.domain.outcome import Refused
from caseboard.ledger import open_ledger
from caseboard.logs import configure_logging
from caseboard.replay.transfer import export

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"


class ScenarioFailed(Exception):
    pass


def record(scenario: Path) -> str:
    """The recorded incident (JSONL export) produced by playing one scenario."""
    ledger = open_ledger("memory://")
    coordinator = Coordinator(ledger, trust_timestamps=True)
    workspace_id = None
    for number, line in enumerate(scenario.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        data = json.loads(line)
        expect = data.pop("expect", None)
        workspace_id = workspace_id or data["workspace_id"]
        try:
            outcome = coordinator.submit(parse_contribution(data))
        except Refusal as refusal:
            outcome = refusal.outcome()
        refused = outcome.reason.value if isinstance(outcome, Refused) else None
        if refused != expect:
            raise ScenarioFailed(
                f"{scenario.name}:{number}: expected {expect or 'acceptance'}, got {outcome.as_json()}"
            )
    assert workspace_id is not None, f"{scenario} is empty"
    out = io.StringIO()
    export(ledger, workspace_id, out)
    return out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", type=Path, default=CORPUS / "scenarios")
    parser.add_argument("--out", type=Path, default=CORPUS)
    parser.add_argument("--check", action="store_true", help="compare with the files in --out; write nothing")
    args = parser.parse_args()
    configure_logging("warning", "json")
    stale = []
    for scenario in sorted(args.scenarios.glob("*.jsonl")):
        try:
            text = record(scenario)
        except ScenarioFailed as error:
            print(f"make_corpus: {error}", file=sys.stderr)
            return 2
        target = args.out / scenario.name
        if args.check:
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                stale.append(target.name)
            continue
        target.write_text(text, encoding="utf-8")
        print(f"{target}: {text.count(chr(10))} commits")
    if stale:
        print(
            f"make_corpus: out of date: {', '.join(stale)} (run python scripts/make_corpus.py)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
