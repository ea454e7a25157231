"""Which workspace a name means: a tenant's id in its tenant only, an operator's bare id or TENANT/ID."""

from __future__ import annotations

import json

import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.errors import AmbiguousWorkspace
from caseboard.domain.outcome import Accepted, Refused
from caseboard.ledger import open_ledger
from tests.unit.board import obs, open_item


def opening(tenant: str, workspace_id: str = "ws") -> str:
    item = open_item()
    item["scope"] = {**item["scope"], "tenant_id": tenant}
    return json.dumps(
        {"workspace_id": workspace_id, "author": {"principal": "op", "role": "operator"}, "items": [item]}
    )


def noting(obs_id: str, workspace_id: str = "ws") -> str:
    author = {"principal": "s", "role": "specialist"}
    return json.dumps({"workspace_id": workspace_id, "author": author, "items": [obs(obs_id)]})


@pytest.fixture
def coordinator() -> Coordinator:
    return Coordinator(open_ledger("memory://"))


def submit(coordinator: Coordinator, line: str, key: str | None = None) -> Accepted | Refused:
    return coordinator.submit(parse_contribution(line), key)


def test_a_tenant_finds_its_own_id_and_never_another_tenants(coordinator: Coordinator) -> None:
    assert isinstance(submit(coordinator, opening("a"), "a/ws"), Accepted)
    workspaces = coordinator.workspaces
    assert workspaces.resolve("a", "ws", 1.0) == "a/ws"
    assert workspaces.resolve("b", "ws", 1.0) is None
    assert isinstance(submit(coordinator, opening("b"), "b/ws"), Accepted)
    assert workspaces.resolve("b", "ws", 1.0) == "b/ws"
    assert isinstance(submit(coordinator, noting("o1"), "b/ws"), Accepted)
    assert (coordinator.ledger.head("a/ws"), coordinator.ledger.head("b/ws")) == (1, 2)


def test_an_operators_workspace_is_found_in_its_tenant_and_blocks_that_tenant_only(coordinator: Coordinator) -> None:
    assert isinstance(submit(coordinator, opening("a")), Accepted)  # no key: the operator's namespace
    assert coordinator.ledger.head("ws") == 1
    workspaces = coordinator.workspaces
    assert workspaces.resolve("a", "ws", 1.0) == "ws"
    assert workspaces.resolve("b", "ws", 1.0) is None
    refused = submit(coordinator, opening("a"), "a/ws")
    assert isinstance(refused, Refused) and refused.reason.value == "workspace_exists"
    assert (refused.field, refused.message) == (
        "items[0]",
        "workspace 'ws' is already open in tenant 'a'; choose another workspace id",
    )
    assert isinstance(submit(coordinator, opening("b"), "b/ws"), Accepted)
    again = submit(coordinator, opening("b"))  # the operator's namespace has ws already
    assert isinstance(again, Refused) and again.reason.value == "workspace_exists"


def test_an_operator_cannot_open_an_id_a_tenant_has_in_its_own_namespace(coordinator: Coordinator) -> None:
    assert isinstance(submit(coordinator, opening("a"), "a/ws"), Accepted)
    refused = submit(coordinator, opening("a"))
    assert isinstance(refused, Refused) and refused.reason.value == "workspace_exists"
    assert coordinator.ledger.head("ws") == 0


def test_a_key_must_name_the_contributions_workspace_and_an_opening_its_scopes_tenant(coordinator: Coordinator) -> None:
    wrong_id = submit(coordinator, opening("a"), "a/other")
    assert isinstance(wrong_id, Refused) and (wrong_id.reason.value, wrong_id.field) == ("invalid", "workspace_id")
    wrong_tenant = submit(coordinator, opening("a"), "b/ws")
    assert isinstance(wrong_tenant, Refused) and wrong_tenant.reason.value == "forbidden"
    assert wrong_tenant.field == "items[0].scope.tenant_id"
    assert coordinator.ledger.keys_named("ws") == []


def test_an_operators_bare_id_is_the_one_tenants_until_a_second_tenant_opens_it(coordinator: Coordinator) -> None:
    assert isinstance(submit(coordinator, opening("a"), "a/ws"), Accepted)
    assert coordinator.workspaces.locate("ws") == "a/ws"
    assert isinstance(submit(coordinator, noting("o1")), Accepted)  # no key: the one tenant's
    assert coordinator.ledger.head("a/ws") == 2
    assert isinstance(submit(coordinator, opening("b"), "b/ws"), Accepted)
    with pytest.raises(AmbiguousWorkspace, match="a/ws, b/ws"):
        coordinator.workspaces.locate("ws")
    ambiguous = submit(coordinator, noting("o2"))
    assert isinstance(ambiguous, Refused) and ambiguous.field == "workspace_id"
    assert coordinator.workspaces.locate("b/ws") == "b/ws"
    assert coordinator.workspaces.locate("never") == "never"
