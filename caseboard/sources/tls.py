"""TLS certificates: the chain each ``host:port`` target presents in its handshake, read, never trusted.

One operation, ``chain``: a handshake with each target (no verification, so any chain is read as presented;
nothing is sent after the handshake), the presented certificates stored as PEM, a block per target headed by
a ``# target`` line. A finding per target (subject, issuer, validity, SHA-256 fingerprints, citing the
target's lines) and, with several targets, one saying which targets present which chain. pyOpenSSL gives the
presented chain (Python's ``ssl`` gives the leaf only before 3.13); ``cryptography`` reads each certificate.
"""

from __future__ import annotations

import contextlib
import select
import socket
from collections.abc import Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from OpenSSL import SSL
from pydantic import Field

from caseboard.sources.base import Answer, Deadline, Finding, Operation, Parameters, Query, SourceFailed, SourcePlugin
from caseboard.sources.config import SourceConfig

TARGET = r"^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$"


class Targets(Parameters):
    server_name: str | None = Field(default=None, max_length=253)
    """The SNI name sent; default: each target's host."""


class Options(Parameters):
    allowed: list[str] = Field(default_factory=list)
    """The ``host:port`` targets this source may connect to; empty: any."""


OPERATIONS: Mapping[str, Operation] = MappingProxyType(
    {"chain": Operation("chain", "the certificate chain each host:port target presents", Targets, ranged=False)}
)


def describe(certificate: x509.Certificate) -> str:
    fingerprint = certificate.fingerprint(hashes.SHA256()).hex()
    return (
        f"subject {certificate.subject.rfc4514_string()}, issuer {certificate.issuer.rfc4514_string()}, "
        f"valid {certificate.not_valid_before_utc.isoformat()} to {certificate.not_valid_after_utc.isoformat()}, "
        f"sha256 {fingerprint}"
    )


class Tls:
    kinds: tuple[str, ...] = ("certificate_check",)
    default_operation = "chain"
    operations = OPERATIONS

    def __init__(self, name: str, config: SourceConfig, options: Options) -> None:
        self.name = name
        self.config = config
        self.kinds = config.kinds or Tls.kinds
        self.allowed = frozenset(options.allowed)

    def close(self) -> None:
        pass

    def plain(self, text: str) -> dict[str, Any]:
        return {"operation": "chain", "targets": text.replace(",", " ").split()}

    def presented(self, target: str, server_name: str | None, deadline: Deadline) -> list[x509.Certificate]:
        host, _, port = target.rpartition(":")
        host = host.strip("[]")
        context = SSL.Context(SSL.TLS_CLIENT_METHOD)
        context.set_verify(SSL.VERIFY_NONE, lambda *_: True)
        with socket.create_connection((host, int(port)), timeout=deadline.left()) as raw:
            raw.setblocking(False)  # the handshake waits in select, against the deadline
            connection = SSL.Connection(context, raw)
            connection.set_tlsext_host_name((server_name or host).encode())
            connection.set_connect_state()
            while True:
                try:
                    connection.do_handshake()
                    break
                except (SSL.WantReadError, SSL.WantWriteError):
                    if deadline.passed() or not select.select([raw], [], [], deadline.left())[0]:
                        raise TimeoutError("no handshake within the deadline") from None
            chain = connection.get_peer_cert_chain(as_cryptography=True) or []
            with contextlib.suppress(SSL.Error):
                connection.shutdown()  # close_notify: nothing else is ever sent
        return list(chain)

    def run(self, query: Query, deadline: Deadline) -> Answer:
        p: Any = query.parameters
        targets = query.targets[: self.config.guardrails.max_series]
        if not targets:
            raise SourceFailed("no host:port targets were named")
        refused = [t for t in targets if self.allowed and t not in self.allowed]
        if refused:
            raise SourceFailed(f"targets outside the allowed list: {', '.join(refused)}")
        lines: list[str] = []
        answer = Answer(b"", "application/x-pem-file")
        if len(query.targets) > len(targets):
            answer.incomplete.append(f"truncated: {len(query.targets)} targets, read the first {len(targets)}")
        chains: dict[str, list[str]] = {}
        now = datetime.now(UTC)
        for target in targets:
            first = len(lines) + 1
            try:
                chain = self.presented(target, p.server_name, deadline)
            except (OSError, SSL.Error) as error:
                lines.append(f"# target {target}: no handshake: {str(error) or type(error).__name__}")
                continue
            lines.append(f"# target {target}: {len(chain)} certificate(s)")
            for certificate in chain:
                lines.extend(certificate.public_bytes(serialization.Encoding.PEM).decode().splitlines())
            if not chain:
                continue
            fingerprints = [c.fingerprint(hashes.SHA256()).hex() for c in chain]
            chains.setdefault(" > ".join(fingerprints), []).append(target)
            answer.answered += (target,)
            statement = f"{target} presents {len(chain)} certificate(s): " + "; then ".join(describe(c) for c in chain)
            answer.findings.append(Finding(statement, target, now, lines=(first, len(lines))))
        if len(targets) > 1 and chains:
            groups = [f"{', '.join(ts)} present chain {k[:16]}…" for k, ts in chains.items()]
            verdict = "the same chain" if len(chains) == 1 else f"{len(chains)} different chains"
            answer.findings.insert(
                0,
                Finding(
                    f"{len(answer.answered)} targets present {verdict}: " + "; ".join(groups),
                    self.name,
                    now,
                    lines=(1, len(lines)),
                ),
            )
        answer.raw = ("\n".join(lines) + "\n").encode()
        return answer


PLUGIN = SourcePlugin("tls", lambda name, config, options: Tls(name, config, options), Options)
