"""docs/architecture.md is the page a newcomer reads first: every file and folder of the project it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOP = ("caseboard/", "tests/", "docs/", "scripts/", "benchmarks/", "schemas/", "corpus/", "examples/")
SEARCHED = ("caseboard", "tests", "docs", "scripts", "benchmarks")


def named_paths(text: str) -> list[str]:
    """The code spans that name a path of the project: under a top folder, a package-relative ``part/file.py``,
    or a bare ``module.py``; ``path::test`` names the file. Outputs a command writes (``OUT/...``) are not."""
    spans = {span.split("::")[0] for span in re.findall(r"`([^`\s]+)`", text)}
    return sorted(
        span
        for span in spans
        if span.startswith(TOP) or re.fullmatch(r"[a-z_][\w/*-]*\.py", span) or re.fullmatch(r"[a-z_]+/", span)
    )


def exists(span: str) -> bool:
    pattern = span.rstrip("/")
    if span.startswith(TOP):
        return any(ROOT.glob(pattern))
    if "/" in pattern:
        return any(ROOT.glob(f"caseboard/{pattern}")) or any(ROOT.glob(f"caseboard/*/{pattern}"))
    return any(any((ROOT / folder).rglob(pattern)) for folder in SEARCHED)


def test_every_path_the_architecture_page_names_exists() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    named = named_paths(text)
    assert len(named) > 50, "the page names the files of each layer"
    assert [span for span in named if not exists(span)] == []


def test_a_path_that_is_not_there_is_found_missing() -> None:
    spans = named_paths("see `caseboard/ledger/nowhere.py`, `ledger/outbox.py` and `gone_module.py`; `OUT/runs/`")
    assert spans == ["caseboard/ledger/nowhere.py", "gone_module.py", "ledger/outbox.py"]
    assert [exists(span) for span in spans] == [False, False, True]
