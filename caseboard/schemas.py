"""JSON Schemas of the contract, generated from the models: ``python -m caseboard.schemas DIR``.

``schemas/`` holds the committed output; tests/unit/test_schemas.py fails when it drifts from the models.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, get_args

from pydantic import TypeAdapter

from caseboard.domain.commit import Commit
from caseboard.domain.contribution import Contribution
from caseboard.domain.items import REGISTRY, Item
from caseboard.handoff.document import Handoff
from caseboard.projections.contract import Projection


def generate() -> dict[str, dict[str, Any]]:
    union = list(get_args(get_args(Item)[0]))
    declared = [entry.model for entry in REGISTRY]
    if union != declared:  # one declaration per item type: the union lists the registry's models, in order
        raise ValueError(f"the Item union ({union}) and caseboard.domain.items.REGISTRY ({declared}) disagree")
    return {
        "contribution.schema.json": Contribution.model_json_schema(),
        "item.schema.json": TypeAdapter(Item).json_schema(),
        "commit.schema.json": Commit.model_json_schema(),
        "projection.schema.json": Projection.model_json_schema(),
        "handoff.v1.schema.json": Handoff.model_json_schema(by_alias=True),
    }


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in generate().items():
        path = folder / name
        path.write_text(render(schema), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1] if len(sys.argv) > 1 else "schemas")):
        print(path)
