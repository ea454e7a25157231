"""The contract says what each field means: every item type and every field carries a description, in the
models, in schemas/ and in the OpenAPI document, so a participant needs no other document."""

from __future__ import annotations

import json
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from caseboard.api import create_app
from caseboard.app import build_app
from caseboard.domain.items import ITEM_TYPES, Item
from caseboard.keys import open_key_store
from caseboard.settings import Settings

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
ROLES = ("operator", "planner", "specialist", "reporter", "verifier", "controller", "any role", "holder")


def item_classes() -> list[type[BaseModel]]:
    union = get_args(Item)[0]
    return list(get_args(union))


def nested(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    if get_origin(annotation) in (Union, types.UnionType) or get_args(annotation):
        for argument in get_args(annotation):
            yield from nested(argument)


def every_model() -> list[type[BaseModel]]:
    seen: dict[str, type[BaseModel]] = {}
    pending = item_classes()
    while pending:
        model = pending.pop()
        if model.__name__ in seen:
            continue
        seen[model.__name__] = model
        for field in model.model_fields.values():
            pending.extend(nested(field.annotation))
    return list(seen.values())


def test_the_union_holds_every_item_type() -> None:
    names = sorted(cls.model_fields["type"].annotation.__args__[0] for cls in item_classes())  # type: ignore[union-attr]
    assert names == sorted(ITEM_TYPES)


@pytest.mark.parametrize("model", item_classes(), ids=lambda m: m.__name__)
def test_every_item_type_says_what_it_does_and_who_may_submit_it(model: type[BaseModel]) -> None:
    description = model.model_json_schema().get("description", "")
    assert len(description) > 40, model.__name__
    assert any(role in description.lower() for role in ROLES), description


@pytest.mark.parametrize("model", every_model(), ids=lambda m: m.__name__)
def test_every_field_of_every_item_has_a_description(model: type[BaseModel]) -> None:
    undescribed = [name for name, field in model.model_fields.items() if not (field.description or "").strip()]
    assert undescribed == [], f"{model.__name__}: {undescribed}"
    assert model.__doc__ and model.__doc__.strip(), model.__name__


def test_a_checks_and_affected_assumptions_descriptions_say_what_they_hold() -> None:
    classes = {cls.__name__: cls for cls in every_model()}
    check = classes["Verification"].model_fields["check"].description or ""
    assert "completed work request" in check
    assumptions = classes["Review"].model_fields["affected_assumptions"].description or ""
    assert "short texts" in assumptions and "ids" in assumptions


def undescribed_in(schema_defs: dict[str, Any], names: set[str]) -> list[str]:
    missing = []
    for name in names:
        definition = schema_defs[name]
        if not definition.get("description"):
            missing.append(name)
        missing += [f"{name}.{p}" for p, v in definition.get("properties", {}).items() if not v.get("description")]
    return missing


def test_the_committed_item_schema_describes_every_type_and_field() -> None:
    schema = json.loads((SCHEMAS / "item.schema.json").read_text())
    assert undescribed_in(schema["$defs"], {m.__name__ for m in every_model()}) == []


def test_the_openapi_document_describes_every_item_type_and_field(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    app, keys = build_app(Settings(), database_url=url), open_key_store(url)
    try:
        document = create_app(app, keys).openapi()
    finally:
        keys.close()
        app.close()
    components = document["components"]["schemas"]
    names = {m.__name__ for m in every_model()} & set(components)
    assert {cls.__name__ for cls in item_classes()} <= names
    assert undescribed_in(components, names) == []


def objects_without_descriptions(node: Any, where: str = "$") -> list[str]:
    """Every object schema anywhere in ``node`` (inline ones too, such as a citation) with an undescribed property."""
    missing: list[str] = []
    if isinstance(node, dict):
        for name, value in node.get("properties", {}).items():
            if isinstance(value, dict) and not value.get("description"):
                missing.append(f"{where}.{name}")
        for key, value in node.items():
            missing += objects_without_descriptions(value, f"{where}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            missing += objects_without_descriptions(value, f"{where}[{index}]")
    return missing


def test_every_property_of_the_item_schema_is_described_inline_objects_included() -> None:
    schema = json.loads((SCHEMAS / "item.schema.json").read_text())
    assert objects_without_descriptions(schema) == []
