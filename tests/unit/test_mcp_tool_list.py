"""The tool list the MCP server advertises, built once, and which input schemas the SDK's ``Mcp-Param-*``
header check is given (docs/adr/0071)."""

from __future__ import annotations

import json

from mcp.shared.inbound import validate_mcp_param_headers
from mcp_types import Tool

from caseboard.mcp_server import arguments as a
from caseboard.mcp_server import operations as op
from caseboard.mcp_server.server import OUTPUT_SCHEMA, ToolSpec, advertised, header_schemas

SUBMIT = ToolSpec("submit", "Submit a contribution", "One contribution.", a.Submit, op.submit, read_only=False)


def routed(name: str, header: object) -> Tool:
    """A tool whose ``region`` argument is mirrored into an ``Mcp-Param-*`` header (or claims to be)."""
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": header}}}
    return Tool(name=name, input_schema=schema)


def test_submit_advertises_the_closed_described_union_of_item_types_and_the_outcome_schema() -> None:
    tool = advertised(SUBMIT)
    items = tool.input_schema["properties"]["items"]["items"]
    union = items.get("oneOf") or items.get("anyOf")
    assert union and "discriminator" in items, items
    defined = tool.input_schema["$defs"]
    kinds = {defined[ref["$ref"].rsplit("/", 1)[1]]["properties"]["type"]["const"] for ref in union}
    assert {"open", "observation", "hypothesis", "work_claim", "work_result"} <= kinds
    assert all(defined[ref["$ref"].rsplit("/", 1)[1]].get("description") for ref in union)
    assert all(defined[ref["$ref"].rsplit("/", 1)[1]].get("additionalProperties") is False for ref in union)
    assert tool.output_schema == OUTPUT_SCHEMA and tool.annotations and tool.annotations.read_only_hint is False


def test_only_a_tool_that_declares_a_header_has_its_schema_checked_against_the_headers() -> None:
    tools = [advertised(SUBMIT), routed("routed", "Region"), routed("misdeclared", 7)]
    checked = header_schemas(tools)
    assert list(checked) == ["routed"]
    # Given None, the SDK skips the check; given submit's schema, the check would have found nothing to check:
    # the same answer, without walking every item type's schema at every call.
    submit_schema = tools[0].input_schema
    arguments = {"workspace_id": "w", "items": [{"type": "observation"}]}
    assert validate_mcp_param_headers(submit_schema, arguments, {"mcp-param-workspace": "x"}) is None
    refused = validate_mcp_param_headers(checked["routed"], {"region": "eu"}, {})
    assert refused is not None and "Mcp-Param-Region" in refused.message
    assert json.dumps(checked["routed"]) == json.dumps(tools[1].input_schema)


def test_docs_agents_md_lists_every_tool_the_server_offers() -> None:
    from pathlib import Path

    from caseboard.mcp_server.catalog import Catalog
    from caseboard.mcp_server.server import tool_specs

    page = (Path(__file__).parents[2] / "docs" / "agents.md").read_text()
    listed = {line.split("`")[1] for line in page.splitlines() if line.startswith("| `")}
    offered = {spec.name for spec in tool_specs(Catalog.__new__(Catalog))}
    assert len(offered) == 8 and listed == offered
