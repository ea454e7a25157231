"""Playing a workspace's contributions through the real doors, for the rules of evidence
(docs/rules-of-evidence.md): the command line (``caseboard submit``, ``caseboard show``) and
the HTTP API of a running server. Each contribution carries its ``at`` (timestamps trusted), so that event
times and commit times are the test's."""

from __future__ import annotations

import contextlib
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import structlog

from caseboard.cli.main import main
from tests.conftest import open_item
from tests.http_server import RunningServer

T0 = datetime(2026, 3, 2, 14, 0, tzinfo=UTC)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def at(minutes: float) -> str:
    return iso(T0 + timedelta(minutes=minutes))


def step(principal: str, role: str, minutes: float, *items: dict[str, Any], **envelope: Any) -> dict[str, Any]:
    """One contribution of ``principal`` as ``role``, committed ``minutes`` after T0."""
    return {"author": {"principal": principal, "role": role}, "at": at(minutes), "items": list(items), **envelope}


def opening(**limits: int) -> dict[str, Any]:
    return step("operator-1", "operator", 0, open_item(**limits))


def observation(obs_id: str, minutes: float, **fields: Any) -> dict[str, Any]:
    return {
        "type": "observation",
        "id": obs_id,
        "statement": f"auth failures seen ({obs_id})",
        "source": {"system": "auth-logs", "instance": "payments-api-3"},
        "event_time": at(minutes),
        "event_time_quality": "verified",
        **fields,
    }


def via_cli(tmp_path: Path, workspace: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Submit every step with ``caseboard submit --trust-timestamps`` and return ``caseboard show``'s JSON: the
    command line's own entry (``caseboard.cli.main.main``), in this process to spare a start-up per call."""
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    lines = tmp_path / f"{workspace}.jsonl"
    lines.write_text("".join(json.dumps({"workspace_id": workspace, **s}) + "\n" for s in steps))
    try:
        code, out = command("--database-url", url, "submit", workspace, "--file", str(lines), "--trust-timestamps")
        assert code == 0, out
        answers = [json.loads(line) for line in out.splitlines()]
        assert all(answer["ok"] for answer in answers), answers
        code, out = command("--database-url", url, "show", workspace, "--format", "json")
        assert code == 0, out
    finally:
        structlog.reset_defaults()  # the command line configured logging onto this test's stderr
    projection: dict[str, Any] = json.loads(out)
    return projection


def command(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(args))
    return code, out.getvalue()


def via_http(server: RunningServer, workspace: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Submit every step over HTTP, each principal with its own key, and return ``GET /workspaces/{id}``."""
    clients: dict[str, Any] = {}
    for body in steps:
        body = json.loads(json.dumps(body))
        author = body.pop("author")
        client = clients.get(author["principal"]) or server.as_(author["principal"], author["role"])
        clients[author["principal"]] = client
        if body["items"][0]["type"] == "open":
            item = body.pop("items")[0]
            item.pop("type")
            response = client.post("/workspaces", json={"workspace_id": workspace, **body, **item})
        else:
            response = client.post(f"/workspaces/{workspace}/contributions", json=body)
        assert response.status_code == 201, response.text
    shown = next(iter(clients.values())).get(f"/workspaces/{workspace}")
    assert shown.status_code == 200, shown.text
    projection: dict[str, Any] = shown.json()
    return projection
