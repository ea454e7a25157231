"""Deterministic participants (no model): a planner, specialists per request kind and a verifier.

They follow a fixed script over the view they are given, so a whole investigation runs the same way every
time: the planner asks for logs and changes, the specialists claim and report, the planner proposes a
hypothesis and asks for a certificate check, the verifier checks the claim against the completed check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from caseboard.dispatcher.notification import Notification
from caseboard.domain.items import Role
from caseboard.domain.principals import same_principal
from caseboard.workers.runtime import View

WINDOW = ("2026-03-02T13:30:00Z", "2026-03-02T14:30:00Z")

FINDINGS: dict[str, dict[str, Any]] = {
    "log_query": {
        "summary": "Authentication failures from 14:03",
        "targets": ["payments-api-1", "payments-api-2", "payments-api-3"],
        "observation": {
            "id": "obs-authentication-failures",
            "statement": "Authentication failures are visible from 14:03",
            "source": {"system": "auth-logs", "instance": "payments-api-2"},
            "event_time": "2026-03-02T14:03:00Z",
            "event_time_quality": "verified",
        },
    },
    "change_calendar": {
        "summary": "Certificate change at 14:00",
        "targets": ["change-calendar"],
        "observation": {
            "id": "obs-certificate-change",
            "statement": "A certificate change is recorded at 14:00",
            "source": {"system": "change-calendar", "instance": "cert-manager"},
            "event_time": "2026-03-02T14:00:00Z",
            "event_time_quality": "verified",
        },
    },
    "certificate_check": {
        "summary": "Instances present the new chain since 14:00; handshakes fail against it",
        "targets": ["payments-api-1", "payments-api-2", "payments-api-3"],
    },
}

FIRST_REQUESTS = (
    {
        "type": "work_request",
        "request_id": "log-query-001",
        "kind": "log_query",
        "target": "payments-api authentication logs 13:30-14:30",
    },
    {
        "type": "work_request",
        "request_id": "change-query-002",
        "kind": "change_calendar",
        "target": "payments-api changes 12:00-14:30",
    },
)
HYPOTHESIS = "hyp-certificate-initiated-failure"


def specialist_principal(kind: str) -> str:
    return f"{kind.replace('_', '-')}-specialist"


@dataclass
class ScriptedPlanner:
    principal: str = "planner-1"
    role: Role = Role.PLANNER

    def contribute(self, notification: Notification, view: View) -> list[dict[str, Any]] | None:
        if notification.kind != "turn":
            return None  # changes are taken into account at the planner's next turn
        if not view["work"]:
            return [dict(item) for item in FIRST_REQUESTS]
        observations = {o["id"] for o in view["observations"]}
        needed = {"obs-authentication-failures", "obs-certificate-change"}
        if needed <= observations and not view["hypotheses"]:
            return [
                {
                    "type": "hypothesis",
                    "id": HYPOTHESIS,
                    "statement": "The certificate change initiated the failures",
                    "supporting_evidence": sorted(needed),
                },
                {
                    "type": "work_request",
                    "request_id": "certificate-check-003",
                    "kind": "certificate_check",
                    "target": "payments-api instances: presented certificate chains",
                },
            ]
        return None


@dataclass
class ScriptedSpecialist:
    kind: str
    principal: str = ""
    role: Role = Role.SPECIALIST
    lease_s: int = 300
    findings: dict[str, dict[str, Any]] = field(default_factory=lambda: FINDINGS)

    def __post_init__(self) -> None:
        self.principal = self.principal or specialist_principal(self.kind)

    def contribute(self, notification: Notification, view: View) -> list[dict[str, Any]] | None:
        if notification.kind != "work_requested" or notification.subject is None:
            return None
        work = next((w for w in view["work"] if w["request_id"] == notification.subject), None)
        if work is None or work["kind"] != self.kind:
            return None
        if work["status"] == "awaiting_result":
            return [{"type": "work_claim", "request_id": work["request_id"], "lease_s": self.lease_s}]
        if work["status"] != "claimed" or not same_principal(work["holder"], self.principal):
            return None
        finding = self.findings.get(self.kind, {"summary": f"nothing scripted for {self.kind}", "targets": []})
        result: dict[str, Any] = {
            "type": "work_result",
            "request_id": work["request_id"],
            "generation": work["generation"],
            "status": "completed",
            "summary": finding["summary"],
            "query": {
                "time_range": list(WINDOW),
                "filters": {"service": view["scope"].get("service", "")},
                "targets": finding["targets"],
                "completed": True,
            },
        }
        if "observation" in finding:
            result["observation"] = finding["observation"]
        return [result]


@dataclass
class ScriptedVerifier:
    principal: str = "verifier-1"
    role: Role = Role.VERIFIER
    verdict: str = "confirmed"

    def contribute(self, notification: Notification, view: View) -> list[dict[str, Any]] | None:
        if notification.kind not in ("claim_to_check", "turn"):
            return None
        checks = [w["request_id"] for w in view["work"] if w["kind"].endswith("_check") and w["status"] == "completed"]
        claims = [h["id"] for h in view["hypotheses"] if h["status"] in ("supported", "challenged")]
        if notification.kind == "claim_to_check":
            claims = [c for c in claims if c == notification.subject]
        if not checks or not claims:
            return None
        return [{"type": "verification", "claim": claims[0], "check": checks[0], "result": self.verdict}]


def scripted_participants(kinds: tuple[str, ...] = tuple(FINDINGS)) -> dict[str, Any]:
    """The cast, by the queue audience each serves (specialists by request kind)."""
    return {
        "planner": ScriptedPlanner(),
        "verifier": ScriptedVerifier(),
        **{f"specialist:{kind}": ScriptedSpecialist(kind) for kind in kinds},
    }
