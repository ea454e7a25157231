"""The read-only diagnostic sources of an evaluation incident, the same for both arms.

A request of a kind gets the next recorded finding of that kind (the last one repeats), after the
finding's arrival delay. A finding's raw lines are stored in the evidence repository when one is given
(artifact ids are the SHA-256 of the bytes, so both arms cite the same id) and its observation cites them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from caseboard.evaluation.incident import EvaluationIncident, Finding

Store = Callable[[bytes], str]
"""Stores the bytes in the evidence repository and returns the artifact id."""


def artifact_id(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def artifact_bytes(lines: tuple[str, ...]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


@dataclass
class Tools:
    incident: EvaluationIncident
    store: Store | None = None
    served: dict[str, Finding] = field(default_factory=dict)
    """The finding each request id got, in the order they were served."""
    counts: dict[str, int] = field(default_factory=dict)

    def serve(self, request_id: str, kind: str) -> Finding:
        """The finding for ``request_id`` (the same one when asked again)."""
        if request_id not in self.served:
            nth = self.counts.get(kind, 0)
            self.counts[kind] = nth + 1
            self.served[request_id] = self.incident.finding(kind, nth)
        return self.served[request_id]

    def observation(self, finding: Finding) -> dict[str, Any] | None:
        """The finding's observation as submitted: with a citation of its raw lines when it has some."""
        if finding.observation is None:
            return None
        body = dict(finding.observation)
        if finding.artifact:
            data = artifact_bytes(finding.artifact)
            stored = self.store(data) if self.store is not None else artifact_id(data)
            body["evidence_ref"] = {"artifact": stored, "lines": [1, len(finding.artifact)]}
        return body
