"""The key of a workspace, and commit schema 2, which seals the tenant in every commit (docs/adr/0130)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from caseboard.domain.commit import Commit, stored_hash
from caseboard.domain.contribution import Author
from caseboard.domain.items import Role
from caseboard.domain.workspace_key import bare, scoped, split, tenant_part
from caseboard.ledger.upcast import upcast_commit

ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,20}", fullmatch=True)
tenants = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:/@-]{0,20}", fullmatch=True)


@given(tenants, ids)
def test_a_scoped_key_splits_back_into_its_tenant_and_id_even_when_the_tenant_holds_a_slash(
    tenant: str, workspace_id: str
) -> None:
    key = scoped(tenant, workspace_id)
    assert split(key) == (tenant, workspace_id)
    assert (bare(key), tenant_part(key)) == (workspace_id, tenant)
    assert key != workspace_id


@given(ids)
def test_a_bare_key_is_of_no_tenant(workspace_id: str) -> None:
    assert split(workspace_id) == (None, workspace_id)
    assert tenant_part(workspace_id) is None and bare(workspace_id) == workspace_id


def commit(**fields: object) -> Commit:
    envelope: dict[str, object] = {
        "workspace_id": "incident-042",
        "version": 1,
        "at": datetime(2026, 3, 2, 14, 0, tzinfo=UTC),
        "author": Author(principal="op", role=Role.OPERATOR),
        "items": (),
        "decisions": (),
        **fields,
    }
    return Commit.new_sealed(**envelope)


def test_schema_2_seals_the_tenant_after_the_id_and_its_key_names_both() -> None:
    sealed = commit(schema_version=2, tenant_id="tenant-a")
    assert sealed.key == "tenant-a/incident-042"
    assert sealed.stored_json.startswith(b'{"schema_version":2,"workspace_id":"incident-042","tenant_id":"tenant-a",')
    assert stored_hash(sealed.stored_json) == sealed.hash
    other = commit(schema_version=2, tenant_id="tenant-b")
    assert other.hash != sealed.hash  # the tenant is in what the hash covers


def test_schema_1_is_the_bytes_it_always_was_and_is_keyed_by_its_bare_id() -> None:
    sealed = commit()
    assert sealed.key == "incident-042"
    assert b"tenant_id" not in sealed.stored_json
    assert sealed.stored_json.startswith(b'{"schema_version":1,"workspace_id":"incident-042","version":1,')


@pytest.mark.parametrize("fields", [{"schema_version": 2}, {"schema_version": 1, "tenant_id": "tenant-a"}])
def test_a_tenant_goes_with_schema_2_and_only_with_it(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match="tenant_id exactly when"):
        commit(**fields)


def test_the_upcaster_reads_schema_1_as_stored_and_refuses_a_schema_it_does_not_know() -> None:
    one = json.loads(commit().stored_json)
    assert upcast_commit(one) is one
    two = json.loads(commit(schema_version=2, tenant_id="t").stored_json)
    assert upcast_commit(two) is two
    with pytest.raises(ValueError, match="0, 1 or 2"):
        upcast_commit({**one, "schema_version": 3})
