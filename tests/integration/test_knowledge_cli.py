"""``caseboard knowledge search|audit|rebuild`` over the corpus and a workspace that promotes: the count of
entries without a verification behind them is 0, and a forged entry makes the audit exit 1."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from caseboard.knowledge import open_knowledge_store
from caseboard.replay.transfer import import_file
from tests.integration.test_knowledge import investigation, promote
from tests.unit.board import Board

CORPUS = Path(__file__).resolve().parents[2] / "corpus"


def cli(url: str, *argv: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "caseboard", "--database-url", url, *argv], capture_output=True, text=True, timeout=120
    )
    return done.returncode, done.stdout, done.stderr


def test_the_corpus_and_a_promotion_have_no_entry_without_a_verification(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    files = sorted(CORPUS.glob("*.jsonl"))
    assert len(files) >= 9
    board = Board("ws-1", url=url)
    for path in files:
        import_file(board.ledger, path)
    code, out, err = cli(url, "knowledge", "audit")
    assert (code, out) == (0, "0 entries, 0 without a verification behind them\n"), err

    investigation(board)
    board.ok("operator", [promote("h-confirmed"), promote("o1", "payments-api-3 fails TLS handshakes")])
    board.ledger.close()
    code, out, err = cli(url, "knowledge", "audit")
    assert (code, out) == (0, "2 entries, 0 without a verification behind them\n"), err
    code, out, _ = cli(url, "knowledge", "rebuild")
    assert (code, out) == (0, "rebuilt 2 entries from the ledger: equal to the store\n")

    code, out, _ = cli(url, "knowledge", "search", "--service", "payments-api", "--q", "handshakes", "--format", "json")
    assert code == 0
    found = json.loads(out)
    assert "not evidence" in found["label"]
    [entry] = found["entries"]
    assert entry["kind"] == "prior_finding" and "not evidence for the current incident" in entry["label"]
    assert entry["provenance"]["finding"] == "o1" and entry["provenance"]["verification"]["hypothesis"] == "h-confirmed"
    code, out, _ = cli(url, "knowledge", "search", "--service", "checkout", "--tenant", "tenant-a")
    assert (code, out) == (0, "no knowledge entries match\n")

    store = open_knowledge_store(url)
    forged = replace(store.entries()[0], entry_id="ws-1:3:0", version=3, finding="h-proposed")
    assert store.insert(forged)
    store.close()
    code, out, _ = cli(url, "knowledge", "audit")
    assert code == 1
    assert "ws-1:3:0: no promotion of 'h-proposed' at version 3, item 0" in out
    assert out.endswith("3 entries, 1 without a verification behind them\n")
    code, out, _ = cli(url, "knowledge", "rebuild")
    assert code == 1 and "1 rows differed" in out
    assert cli(url, "knowledge", "audit")[0] == 0


def test_a_mistake_is_one_line_and_no_traceback(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    code, _, err = cli(url, "knowledge", "search", "--service", "s", "--q", "x" * 300)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    code, _, err = cli(url, "knowledge", "search")
    assert code == 2 and "--service" in err
