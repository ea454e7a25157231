"""A specialist joins incident-042 with ``caseboard.client`` (plain HTTP, on httpx).

    python examples/client_specialist.py --url http://127.0.0.1:8000 --key cbk_...

The same steps as ``mcp_specialist.py``: list the open work, claim a request, report a result with an
observation, read the model-facing view. The claim goes through ``submit_with_resync`` (read, decide, submit
expecting that version; decide again if someone else committed first), and every submission carries an
idempotency key, so a retry after a lost answer cannot commit twice.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from caseboard.client import Caseboard
from caseboard.domain.errors import Refusal

WORKSPACE = "incident-042"
OPEN = ("awaiting_result",)


def join(url: str, key: str) -> int:
    with Caseboard(url, key) as board:
        me = board.whoami()
        chosen: dict[str, Any] = {}

        def claim(state: dict[str, Any]) -> list[dict[str, Any]]:
            free = [w for w in state["work"] if w["status"] in OPEN or (w["status"] == "claimed" and w["lease_lapsed"])]
            if not free:
                raise LookupError("nothing to claim")
            chosen.update(free[0])
            return [{"type": "work_claim", "request_id": free[0]["request_id"], "lease_s": 300}]

        try:
            claimed = board.submit_with_resync(WORKSPACE, claim)
        except LookupError:
            print(json.dumps({"done": "nothing to claim"}))
            return 0
        except Refusal as refused:
            print(json.dumps({"refused": refused.reason.value, "message": refused.message}))
            return 1
        print(json.dumps({"claimed": chosen["request_id"], "workspace_version": claimed["workspace_version"]}))
        result = {
            "type": "work_result",
            "request_id": chosen["request_id"],
            "generation": claimed["items"][0]["generation"],
            "status": "completed",
            "summary": f"{chosen['kind']} checked by {me.principal}",
            "observation": {
                "id": f"obs-{chosen['request_id']}-{me.principal}",
                "statement": "The payments-api certificate chain was replaced at 14:00 and lacks the intermediate",
                "source": {"system": "tls-probe", "instance": "payments-api-2"},
                "event_time": "2026-03-02T14:00:00Z",
                "event_time_quality": "verified",
                "evidence_ref": "artifact://tls/payments-api-2/2026-03-02T1400",
            },
        }
        reported = board.submit(WORKSPACE, [result], idempotency_key=f"{me.principal}/{chosen['request_id']}")
        view = board.view(WORKSPACE, budget_chars=4000)
        print(json.dumps({"reported_at": reported["workspace_version"], "view_version": view["built_from_version"]}))
        return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("CASEBOARD_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--key", default=os.environ.get("CASEBOARD_API_KEY"), help="default: $CASEBOARD_API_KEY")
    args = parser.parse_args()
    if not args.key:
        parser.error("an API key is needed: --key or CASEBOARD_API_KEY")
    return join(args.url, args.key)


if __name__ == "__main__":
    raise SystemExit(main())
