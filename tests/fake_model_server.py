"""A small OpenAI-compatible chat completions server for the tests: scripted replies, then a policy.

``FakeModel`` listens on 127.0.0.1 (a free port) in a thread. Each request to ``.../chat/completions`` takes
the next scripted ``Reply`` whose ``role`` matches the caller's (the role named in its system prompt), or,
when none is left, asks ``policy``. ``incident_policy`` plays incident-042's investigation from what the
prompt shows, as a model would: the planner asks for logs and changes, then proposes the certificate
hypothesis and a certificate check; specialists claim, then report; the verifier confirms the claim against
the completed check. Every request is kept (``requests``) so a test can hash what was sent.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from caseboard.workers.scripted import FINDINGS, FIRST_REQUESTS, WINDOW


@dataclass
class Reply:
    content: str | None = None
    status: int = 200
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    role: str | None = None
    """Only a caller of this role takes it (None: anyone)."""
    usage: dict[str, int] | None = None
    """The usage the reply reports (None: counted from the prompt and the reply)."""


ENTRY = re.compile(r"<<<entry-[0-9a-f]+ \d+ (\S+) (\S+) (\S+)>>>\n(?:SUSPICIOUS[^\n]*\n)?provenance: ([^\n]*)")
ROLE = re.compile(r"^You are (\S+), a (\w+) ")


def role_of(messages: list[dict[str, Any]]) -> str:
    found = ROLE.search(messages[0]["content"]) if messages else None
    return found.group(2) if found else "unknown"


def entries(text: str) -> list[dict[str, str]]:
    """The view's entries as the prompt shows them: section, kind, ref and the provenance line."""
    return [{"section": s, "kind": k, "ref": r, "provenance": p} for s, k, r, p in ENTRY.findall(text)]


def items(*found: dict[str, Any]) -> str:
    return json.dumps({"items": list(found), "rationale": "scripted"})


def incident_policy(messages: list[dict[str, Any]]) -> Reply:
    role, text = role_of(messages), messages[-1]["content"]
    shown = entries(text)
    observations = {e["ref"] for e in shown if e["kind"] == "observation"}
    hypotheses = [e for e in shown if e["kind"] == "hypothesis"]
    work = [e for e in shown if e["kind"] == "work"]
    if role == "planner":
        if not work:
            return Reply(items(*FIRST_REQUESTS))  # the scripted planner's first requests
        needed = {"obs-authentication-failures", "obs-certificate-change"}
        if needed <= observations and not hypotheses:
            return Reply(
                items(
                    {
                        "type": "hypothesis",
                        "id": "hyp-certificate-initiated-failure",
                        "statement": "The certificate change initiated the failures",
                        "supporting_evidence": sorted(needed),
                    },
                    {
                        "type": "work_request",
                        "request_id": "certificate-check-003",
                        "kind": "certificate_check",
                        "target": "payments-api instances: presented certificate chains",
                    },
                )
            )
        return Reply(items())
    if role == "specialist":
        claim = re.search(r"request (\S+) \(kind (\w+);[^\n]*is awaiting_result", text)
        if claim:
            return Reply(items({"type": "work_claim", "request_id": claim.group(1), "lease_s": 300}))
        held = re.search(r"You hold request (\S+) \(kind (\w+);[^\n]*at generation (\d+)", text)
        if held:
            finding = FINDINGS[held.group(2)]
            result: dict[str, Any] = {
                "type": "work_result",
                "request_id": held.group(1),
                "generation": int(held.group(3)),
                "status": "completed",
                "summary": finding["summary"],
                "query": {
                    "time_range": list(WINDOW),
                    "filters": {"service": "payments-api"},
                    "targets": finding["targets"],
                    "completed": True,
                },
            }
            if "observation" in finding:
                result["observation"] = finding["observation"]
            return Reply(items(result))
        return Reply(items())
    if role == "verifier":
        checks = [
            e["ref"]
            for e in work
            if "kind=certificate_check" in e["provenance"] and "status=completed" in e["provenance"]
        ]
        claims = [e["ref"] for e in hypotheses if re.search(r"status=(supported|challenged)", e["provenance"])]
        if checks and claims:
            return Reply(items({"type": "verification", "claim": claims[0], "check": checks[0], "result": "confirmed"}))
        return Reply(items())
    return Reply(items())


class FakeModel:
    def __init__(
        self, policy: Callable[[list[dict[str, Any]]], Reply] = incident_policy, *, model: str = "fake-model-1"
    ) -> None:
        self.policy = policy
        self.model = model
        self.script: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.served: list[tuple[str, Reply]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                reply = fake.next_reply(body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.status != 200:
                    payload = json.dumps({"error": {"message": "scripted", "type": "scripted"}}).encode()
                else:
                    prompt_chars = sum(len(m["content"]) for m in body["messages"])
                    completion = max(1, len(reply.content or "") // 4)
                    payload = json.dumps(
                        {
                            "id": f"chatcmpl-{len(fake.requests)}",
                            "object": "chat.completion",
                            "created": 0,
                            "model": fake.model,
                            "choices": [
                                {
                                    "index": 0,
                                    "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": reply.content},
                                }
                            ],
                            "usage": reply.usage
                            or {
                                "prompt_tokens": prompt_chars // 4,
                                "completion_tokens": completion,
                                "total_tokens": prompt_chars // 4 + completion,
                            },
                        }
                    ).encode()
                try:
                    self.send_response(reply.status)
                    for name, value in {"content-type": "application/json", **reply.headers}.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def next_reply(self, body: dict[str, Any]) -> Reply:
        role = role_of(body["messages"])
        with self._lock:
            self.requests.append(body)
            for i, scripted in enumerate(self.script):
                if scripted.role in (None, role):
                    reply = self.script.pop(i)
                    break
            else:
                reply = self.policy(body["messages"])
            self.served.append((role, reply))
        return reply

    def __enter__(self) -> FakeModel:
        self.thread.start()
        return self

    def _serve(self) -> None:
        self.server.timeout = 0.05  # handle_request returns at least this often, so a stop is seen promptly
        while not self._stop.is_set():
            self.server.handle_request()

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self.thread.join(timeout=10)
        self.server.server_close()
