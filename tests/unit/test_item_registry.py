"""One declaration per item type: the registry (``caseboard.domain.items.REGISTRY``) is the source of the
stored names, the role table, the coordinator's rule dispatch and a commit's summary text, and the ``Item``
union, the rules and the committed JSON Schemas agree with it (docs/architecture.md, "Adding an item type")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest

from caseboard.coordinator.item_rules import RULES
from caseboard.domain import items as it
from caseboard.domain.commit import describe
from caseboard.domain.items import ITEM_TYPES, ITEMS, REGISTRY, ROLES, Item, Role
from caseboard.schemas import generate
from tests.unit.board import Board, claim, hyp, link, obs, open_item, proposal, question, review, work_request

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
UNION = list(get_args(get_args(Item)[0]))


def test_the_registry_lists_the_models_of_the_union_in_its_order() -> None:
    assert [entry.model for entry in REGISTRY] == UNION
    assert tuple(entry.name for entry in REGISTRY) == ITEM_TYPES
    assert len(set(ITEM_TYPES)) == len(ITEM_TYPES)
    for entry in REGISTRY:
        assert entry.model.model_fields["type"].annotation == it.Literal[entry.name]  # type: ignore[attr-defined]


def test_every_registered_type_has_a_rule_and_roles() -> None:
    assert sorted(RULES) == sorted(ITEM_TYPES)
    assert {entry.name: entry.roles for entry in REGISTRY} == ROLES
    assert all(roles and roles <= set(Role) for roles in ROLES.values())


@pytest.mark.parametrize("name", ["item.schema.json", "contribution.schema.json"])
def test_the_committed_schemas_know_the_registered_types_and_no_other(name: str) -> None:
    committed = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    union = committed if name == "item.schema.json" else committed["properties"]["items"]["items"]
    mapping = union["discriminator"]["mapping"]
    assert sorted(mapping) == sorted(ITEM_TYPES)
    assert {ref.rsplit("/", 1)[1] for ref in mapping.values()} == {entry.model.__name__ for entry in REGISTRY}
    assert [one["$ref"].rsplit("/", 1)[1] for one in union["oneOf"]] == [entry.model.__name__ for entry in REGISTRY]
    assert committed == generate()[name]


SAMPLES: list[tuple[dict[str, Any], str]] = [
    (open_item(), "open"),
    (obs("obs-1"), "observation obs-1"),
    (hyp("hyp-1"), "hypothesis hyp-1"),
    (link("obs-1", "hyp-1", "challenges"), "link obs-1 challenges hyp-1"),
    (question("q-1"), "question q-1"),
    ({"type": "answer", "question": "q-1", "text": "all"}, "answer q-1"),
    (proposal("prop-1", 2, "hyp-1"), "proposal prop-1"),
    (review("prop-1", "retained", 3), "review prop-1"),
    (work_request("req-1"), "work_request req-1"),
    (claim("req-1"), "work_claim req-1"),
    ({"type": "work_renew", "request_id": "req-1", "generation": 1, "lease_s": 60}, "work_renew req-1"),
    (
        {"type": "work_result", "request_id": "req-1", "generation": 1, "status": "failed", "summary": "x"},
        "work_result req-1",
    ),
    ({"type": "work_reclaim", "request_id": "req-1", "reason": "lapsed"}, "work_reclaim req-1"),
    ({"type": "verification", "claim": "hyp-1", "check": "req-1", "result": "refuted"}, "verification hyp-1 refuted"),
    ({"type": "selection", "select": ["obs-1"], "reason": "r"}, "selection"),
    (
        {
            "type": "judgment",
            "invocation_id": "inv-1",
            "component": "planner.propose",
            "model": "m",
            "prompt_sha256": "0" * 64,
            "input_workspace_version": 1,
        },
        "judgment inv-1",
    ),
    ({"type": "cycle", "number": 2}, "cycle 2"),
    ({"type": "status", "to": "budget_exhausted", "reason": "r"}, "status budget_exhausted"),
    ({"type": "reopen", "owner": "op-1", "runtime_limits": {}}, "reopen"),
    ({"type": "constraints", "goal": "find it"}, "constraints"),
    (
        {
            "type": "promote",
            "finding": "hyp-1",
            "statement": "s",
            "scope": {"service": "payments-api", "environment": "production"},
            "owner": "op-1",
        },
        "promote hyp-1",
    ),
    ({"type": "retire", "entry": "ws-1:3:0", "reason": "r", "contradicted_by": "ws-2"}, "retire ws-1:3:0"),
]


def test_each_type_is_described_as_its_declaration_says() -> None:
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(Item)
    assert sorted(sample["type"] for sample, _ in SAMPLES) == sorted(ITEM_TYPES)
    for sample, text in SAMPLES:
        item = adapter.validate_python(sample)
        assert describe(item) == ITEMS[item.type].describe(item) == text


def test_the_role_table_is_what_the_coordinator_enforces() -> None:
    """For each type, a role outside its declaration is refused ``forbidden`` naming the allowed ones."""
    board, unopened = Board(), Board("ws-2")
    board.open()
    for sample, _ in SAMPLES:
        allowed = ITEMS[sample["type"]].roles
        for role in sorted(set(Role) - allowed):
            outcome = (unopened if sample["type"] == "open" else board).submit(role.value, [sample])
            assert outcome["reason"] == "forbidden", (sample["type"], role, outcome)
            assert outcome["message"].endswith(f"(allowed: {', '.join(sorted(allowed))})")
