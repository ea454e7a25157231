"""A property-based run over the OpenAPI document against a running server: no 5xx, no response that
breaks its declared schema, status code or content type. The events stream is left out (it streams until
its timeout by design) and has its own tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.http_server import RunningServer, open_body, running_server

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    url = f"sqlite:///{tmp_path_factory.mktemp('openapi')}/ledger.db"
    with running_server(url) as running:
        operator = running.as_("oncall-operator", "operator")
        assert operator.post("/workspaces", json=open_body("ws-real")).status_code == 201
        yield running


@pytest.fixture(scope="module")
def operator_token(server: RunningServer) -> str:
    return server.token("fuzz-operator", "operator")


def test_no_operation_answers_with_a_server_error_or_off_its_schema(server: RunningServer, operator_token: str) -> None:
    schema = schemathesis.openapi.from_url(f"{server.base_url}/openapi.json").exclude(path_regex="/events$")
    headers = {"Authorization": f"Bearer {operator_token}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 9
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=60,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def holds(case: Any) -> None:
            path_parameters = case.path_parameters or {}
            if "workspace_id" in path_parameters and len(str(path_parameters["workspace_id"])) % 2 == 0:
                path_parameters["workspace_id"] = "ws-real"  # half the cases reach a workspace that exists
            if case.headers and len(str(case.headers.get("X-Caseboard-Role", ""))) % 2 == 0:
                case.headers.pop("X-Caseboard-Role", None)  # and half act in the key's own role
            body = case.body if isinstance(case.body, dict) else {}
            if isinstance(body.get("scope"), dict) and len(str(body.get("workspace_id"))) % 2 == 0:
                body["scope"]["tenant_id"] = "tenant-a"  # and half open a workspace in the key's tenant
            case.call_and_validate(base_url=server.base_url, headers=headers, checks=CHECKS)

        holds()


def test_the_openapi_document_declares_every_route_and_its_refusals(server: RunningServer) -> None:
    document = __import__("httpx").get(f"{server.base_url}/openapi.json").json()
    paths = document["paths"]
    assert set(paths) >= {
        "/workspaces",
        "/workspaces/{workspace_id}",
        "/workspaces/{workspace_id}/contributions",
        "/workspaces/{workspace_id}/ledger",
        "/workspaces/{workspace_id}/timeline",
        "/workspaces/{workspace_id}/view",
        "/workspaces/{workspace_id}/events",
        "/health",
        "/metrics",
    }
    submit = paths["/workspaces/{workspace_id}/contributions"]["post"]["responses"]
    assert {"201", "200", "401", "403", "404", "409", "422"} <= set(submit)
    assert submit["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/Refusal")
    assert Path(__file__).name  # the module runs against the served document, not a copy
