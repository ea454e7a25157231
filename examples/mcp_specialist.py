"""A specialist joins incident-042 over MCP with the official SDK's client (``pip install 'mcp>=2.3,<3'``).

    python examples/mcp_specialist.py --url http://127.0.0.1:8000/mcp --key cbk_...

It lists the open work, claims a request it may claim, reports a result with an observation, and reads the
model-facing view. Each step prints one JSON line. The key decides who the specialist is and which tenant it
sees; nothing in the arguments can change that.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from typing import Any

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

WORKSPACE = "incident-042"


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    body: dict[str, Any] = result.structured_content or {}
    print(json.dumps({"tool": tool, "ok": body.get("ok"), "reason": body.get("reason")}), flush=True)
    return body


async def join(url: str, key: str) -> int:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        me = await call(client, "whoami", {})
        work = await call(client, "list_work", {"workspace_id": WORKSPACE})
        claimable = [request for request in work["work"] if request["claimable"]]
        if not claimable:
            print(json.dumps({"done": "nothing to claim"}))
            return 0
        request = claimable[0]
        claim = {"type": "work_claim", "request_id": request["request_id"], "lease_s": 300}
        claimed = await call(client, "submit", {"workspace_id": WORKSPACE, "items": [claim]})
        if not claimed["ok"]:
            print(json.dumps({"next_step": claimed["next_step"]}))
            return 1
        generation = claimed["items"][0]["generation"]
        result = {
            "type": "work_result",
            "request_id": request["request_id"],
            "generation": generation,
            "status": "completed",
            "summary": f"{request['kind']} checked by {me['principal']}",
            "observation": {
                "id": f"obs-{request['request_id']}-{me['principal']}",
                "statement": "The payments-api certificate chain was replaced at 14:00 and lacks the intermediate",
                "source": {"system": "tls-probe", "instance": "payments-api-2"},
                "event_time": "2026-03-02T14:00:00Z",
                "event_time_quality": "verified",
                "evidence_ref": "artifact://tls/payments-api-2/2026-03-02T1400",
            },
        }
        reported = await call(
            client,
            "submit",
            {
                "workspace_id": WORKSPACE,
                "items": [result],
                "idempotency_key": f"{me['principal']}/{request['request_id']}",
            },
        )
        view = await call(client, "read_view", {"workspace_id": WORKSPACE, "budget_chars": 4000})
        print(
            json.dumps(
                {"reported_at": reported.get("workspace_version"), "view_version": view.get("built_from_version")}
            )
        )
        return 0 if reported["ok"] and view["ok"] else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("CASEBOARD_MCP_URL", "http://127.0.0.1:8000/mcp"))
    parser.add_argument("--key", default=os.environ.get("CASEBOARD_API_KEY"), help="default: $CASEBOARD_API_KEY")
    args = parser.parse_args()
    if not args.key:
        parser.error("an API key is needed: --key or CASEBOARD_API_KEY")
    return asyncio.run(join(args.url, args.key))


if __name__ == "__main__":
    raise SystemExit(main())
