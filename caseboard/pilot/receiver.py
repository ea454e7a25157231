"""The quickstart's handoff receiver: a webhook on loopback that checks each delivery's signature
(``caseboard.handoff.signing.verify``), takes each ``Caseboard-Delivery`` id once and keeps what it took. With
``folder``, every request it was sent is also written there as it came (``NNN.json``: its headers and body), so
that anyone holding the secret can check the signatures again."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from caseboard.handoff.signing import verify
from caseboard.pilot.servers import Serving


@dataclass(frozen=True)
class Delivery:
    delivery_id: str
    document: dict[str, Any]
    signed: bool


class Receiver:
    def __init__(self, secret: str, port: int = 0, folder: Path | None = None) -> None:
        self.secret = secret.encode()
        self.folder = folder
        self.taken: list[Delivery] = []
        self.requests = 0
        self.arrived = threading.Event()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                signed = verify(receiver.secret, body, self.headers.get("Caseboard-Signature", ""))
                delivery = self.headers.get("Caseboard-Delivery", "")
                with receiver._lock:
                    receiver.requests += 1
                    if receiver.folder is not None:
                        kept = {"headers": dict(self.headers), "body": body.decode("utf-8", "replace")}
                        (receiver.folder / f"{receiver.requests:03d}.json").write_text(json.dumps(kept))
                    if signed and all(d.delivery_id != delivery for d in receiver.taken):
                        receiver.taken.append(Delivery(delivery, json.loads(body), signed))
                        receiver.arrived.set()
                self.send_response(200 if signed else 401)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.serving = Serving(ThreadingHTTPServer(("127.0.0.1", port), Handler))
        self.url = f"http://127.0.0.1:{self.serving.server.server_address[1]}/handoff"

    def stop(self) -> None:
        self.serving.stop()


def describe(document: dict[str, Any]) -> list[str]:
    """The lines a person reads of a ``caseboard.handoff.v1`` document."""
    lines = [
        f"{document['schema']} {document['id']}",
        f"  status:   {document['status']} ({document.get('reason') or ''})",
        f"  handoff:  {document.get('handoff') or ''}",
        f"  goal:     {document.get('goal') or ''}",
    ]
    for question in document.get("open_questions") or ():
        lines.append(f"  open question {question['id']}: {question['text']}")
    for check in document.get("incomplete_checks") or ():
        lines.append(f"  incomplete check {check['request_id']} ({check['status']}): {check.get('summary') or ''}")
    for proposal in document.get("proposals") or ():
        lines.append(f"  proposal {proposal['id']}: {proposal['status']}")
    lines.append(f"  note:     {document.get('note') or ''}")
    return lines
