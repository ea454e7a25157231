"""Properties of replay over the corpus, for both reducers: folding in two parts (through a snapshot's
dump and load) equals folding at once, and replay reads the ledger without writing to it."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from caseboard.ledger import open_ledger
from caseboard.reducers import REDUCERS
from caseboard.replay.rebuild import fold, replay_ledger
from caseboard.replay.records import read_file
from caseboard.replay.transfer import import_file

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
INCIDENTS = {path.stem: list(read_file(path)) for path in sorted(CORPUS.glob("*.jsonl"))}


@settings(max_examples=60, deadline=None)
@given(
    incident=st.sampled_from(sorted(INCIDENTS)),
    reducer=st.sampled_from(sorted(REDUCERS)),
    cut=st.floats(min_value=0.0, max_value=1.0),
)
def test_folding_in_two_parts_through_a_snapshot_equals_folding_at_once(
    incident: str, reducer: str, cut: float
) -> None:
    commits = INCIDENTS[incident]
    chosen = REDUCERS[reducer]
    split = max(1, round(cut * len(commits)))
    first = fold(commits[:split], chosen)
    resumed = chosen.fold(chosen.load(chosen.dump(first)), commits[split:])
    assert chosen.render(resumed) == chosen.render(fold(commits, chosen))


def test_replay_from_a_ledger_writes_nothing(tmp_path: Path) -> None:
    ledger = open_ledger(f"sqlite:///{tmp_path}/ledger.db")
    try:
        import_file(ledger, CORPUS / "incident-042.jsonl")
        before = [c.model_dump() for c in ledger.read("incident-042")]
        for reducer in REDUCERS:
            for version in (1, 10, 20):
                replay_ledger(ledger, "incident-042", version, reducer)
            assert ledger.latest_snapshot("incident-042", reducer, 10**9) is None
        assert [c.model_dump() for c in ledger.read("incident-042")] == before
    finally:
        ledger.close()
