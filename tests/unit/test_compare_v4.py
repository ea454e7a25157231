"""``caseboard compare`` of workspace-rules-v3 and v4 over the corpus shows exactly the differences that
docs/reducers.md lists as intended (the table between its ``compare v3 v4`` markers)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def intended() -> list[dict[str, str]]:
    text = (ROOT / "docs" / "reducers.md").read_text()
    table = text.split("<!-- compare v3 v4 -->")[1].split("<!-- end compare v3 v4 -->")[0]
    rows = [line.strip("|").split("|") for line in table.strip().splitlines()[2:]]
    names = ("incident", "version", "aspect", "item", "a", "b")
    return [dict(zip(names, (cell.strip().strip("`") for cell in row), strict=True)) for row in rows]


def test_compare_of_v3_and_v4_over_the_corpus_shows_exactly_the_intended_differences() -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "caseboard",
            "compare",
            "--reducer",
            "workspace-rules-v3",
            "--reducer",
            "workspace-rules-v4",
            str(ROOT / "corpus"),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    found = json.loads(run.stdout)
    assert found["incidents"] >= 9
    differences = [{k: str(v) for k, v in d.items()} for d in found["differences"]]
    assert differences == intended()
    assert run.returncode == (0 if not differences else 1)
