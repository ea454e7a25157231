"""The recorded-reply model twin (``python -m caseboard.pilot.twin``): an OpenAI-compatible chat completions
endpoint that answers the quickstart's planner and verifier from replies recorded in ``twin_replies.json``
(package data), not from a model.

Each recorded reply names the role it is for, the entries of the caseboard view it needs (``bind``: an entry of
a kind whose text, and ref, match patterns, its ref then written where the reply says ``{name}``) and those that must
be absent; the first reply whose conditions hold is sent, and ``{"items": []}`` when none does. Point
``CASEBOARD_MODEL_URL`` at any OpenAI-compatible endpoint to use a model instead (docs/pilot.md).
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from caseboard.pilot.servers import Serving

MODEL = "caseboard-twin"
ROLE = re.compile(r"^You are (\S+), a (\w+) ")
ENTRY = re.compile(r"<<<(entry-[0-9a-f]+) \d+ \S+ (\S+) (\S+)>>>\n(.*?)<<<end \1 \d+>>>", re.DOTALL)


@dataclass(frozen=True)
class Entry:
    kind: str
    ref: str
    text: str


def entries(prompt: str) -> list[Entry]:
    """The entries of the caseboard view a prompt shows: kind, ref and the entry's text (provenance, excerpt)."""
    return [Entry(kind, ref, text) for _, kind, ref, text in ENTRY.findall(prompt)]


def recorded() -> list[dict[str, Any]]:
    text = resources.files("caseboard.pilot").joinpath("twin_replies.json").read_text(encoding="utf-8")
    return list(json.loads(text)["replies"])


def _find(shown: list[Entry], want: dict[str, str]) -> Entry | None:
    pattern, ref = re.compile(want.get("match", ""), re.DOTALL), re.compile(want.get("ref", ""))
    return next((e for e in shown if e.kind == want["kind"] and ref.search(e.ref) and pattern.search(e.text)), None)


def _fill(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return re.sub(r"\{(\w+)\}", lambda m: names.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [_fill(v, names) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, names) for k, v in value.items()}
    return value


def reply(messages: list[dict[str, Any]], replies: list[dict[str, Any]], values: dict[str, str]) -> dict[str, Any]:
    """The first recorded reply for the caller's role whose conditions the prompt meets, filled in; else none.
    Which one was sent (or, when none fits, the whole prompt) is written to standard output."""
    found = ROLE.search(messages[0]["content"]) if messages else None
    role = found.group(2) if found else "unknown"
    prompt = messages[-1]["content"] if messages else ""
    shown = entries(prompt)
    for recorded_reply in replies:
        if recorded_reply["role"] != role:
            continue
        if not all(text in prompt for text in recorded_reply.get("needs_text", ())):
            continue
        if any(_find(shown, want) for want in recorded_reply.get("absent", ())):
            continue
        names = dict(values)
        for name, want in recorded_reply.get("bind", {}).items():
            entry = _find(shown, want)
            if entry is None:
                break
            names[name] = entry.ref
        else:
            print(f"{role}: recorded reply {recorded_reply['name']!r}", flush=True)
            return {"items": _fill(recorded_reply["items"], names), "rationale": recorded_reply["rationale"]}
    print(f"{role}: no recorded reply fits this view:\n{prompt}\n", flush=True)
    return {"items": [], "rationale": "no recorded reply fits this view"}


class Twin:
    """The endpoint, on a thread of this process: ``url`` is what ``CASEBOARD_MODEL_URL`` takes."""

    def __init__(self, values: dict[str, str], port: int = 0) -> None:
        replies = recorded()
        self.calls = 0
        twin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def do_GET(self) -> None:  # /v1/models, as a client probing the endpoint asks
                payload = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                content = json.dumps(reply(body.get("messages") or [], replies, values))
                twin.calls += 1
                prompt = sum(len(str(m.get("content", ""))) for m in body.get("messages") or []) // 4
                payload = json.dumps(
                    {
                        "id": f"twin-{twin.calls}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": MODEL,
                        "choices": [
                            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
                        ],
                        "usage": {
                            "prompt_tokens": prompt,
                            "completion_tokens": len(content) // 4 + 1,
                            "total_tokens": prompt + len(content) // 4 + 1,
                        },
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.serving = Serving(ThreadingHTTPServer(("127.0.0.1", port), Handler))
        self.url = f"http://127.0.0.1:{self.serving.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.serving.stop()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m caseboard.pilot.twin", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--value", action="append", default=[], metavar="NAME=TEXT", help="a {NAME} in the replies")
    args = parser.parse_args()
    values = dict(v.split("=", 1) for v in args.value)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    twin = Twin(values, args.port)
    sys.stdout.write(f"model twin: recorded replies, not a model, at {twin.url}\n")
    sys.stdout.flush()
    stop.wait()
    twin.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
