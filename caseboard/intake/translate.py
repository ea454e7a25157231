"""An alert group as caseboard records it: the workspace it belongs to, the ``open`` item that starts it, the
record of the notification (stored as an artifact) and one observation per alert citing its line.

Pure: nothing but the group, the tenant's configuration and the stored record's id. Every refusal is decided
here, before anything is stored or committed, so that a notification is applied whole or not at all.

The record is JSON Lines: line 1 the group (source, group key, labels, summary, link), then one line per alert
in the order received, each with sorted keys. It is made from what caseboard read, so the same alerts make the
same bytes, and each observation cites exactly the line of its alert (``lines [k, k]``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from caseboard.domain import items as it
from caseboard.domain.citations import MAX_EXCERPT_BYTES
from caseboard.domain.errors import Reason, Refusal
from caseboard.intake.alerts import Alert, AlertGroup
from caseboard.tenant_config import TenantConfig

MAX_OBSERVED = 99
"""A contribution holds at most 100 items: the first 99 new alerts of a notification are observed one each; the
rest are named together by one more observation (their lines stay in the stored record)."""
ID = re.compile(it.WORKSPACE_ID_PATTERN)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def workspace_id(group: AlertGroup) -> str:
    """One workspace per alert group and source: ``alert-`` and 16 hex digits of the group key's SHA-256."""
    return f"alert-{_digest(group.source, group.group)[:16]}"


def observation_id(group: AlertGroup, alert: Alert) -> str:
    """One observation per notice of an alert (its key, status and times): a re-send repeats the id."""
    return f"alert-{_digest(group.source, group.group, *alert.notice())[:20]}"


def record(group: AlertGroup) -> bytes:
    head = {
        "source": group.source,
        "group": group.group,
        "labels": group.labels,
        "summary": group.summary,
        "external_url": group.external_url,
        "alerts": len(group.alerts),
    }
    lines = [head, *(alert.model_dump(mode="json") for alert in group.alerts)]
    return b"".join(json.dumps(line, sort_keys=True, ensure_ascii=False).encode() + b"\n" for line in lines)


def check_tenant(group: AlertGroup, tenant_id: str, config: TenantConfig, where: str) -> None:
    """Refuse a group one of whose alerts is labelled with another tenant (``forbidden``)."""
    name = config.tenant_label
    for index, alert in enumerate(group.alerts):
        labelled = alert.labels.get(name)
        if labelled is not None and labelled != tenant_id:
            raise Refusal(
                Reason.FORBIDDEN,
                f"{where}[{index}].labels.{name}: this alert is labelled for tenant {labelled!r}, and this key "
                f"acts for {tenant_id!r}; send it with that tenant's intake key",
                field=f"{where}[{index}].labels.{name}",
            )


def _label(labels: dict[str, str], names: Sequence[str], what: str, default: str | None, where: str) -> str:
    for name in names:
        value = labels.get(name)
        if value:
            if not ID.match(value):
                raise Refusal(
                    Reason.INVALID,
                    f"{where}.{name}: {value!r} cannot name the {what} (letters, digits and ._:@- only, at most "
                    "128 characters); map another label in CASEBOARD_TENANTS",
                    field=f"{where}.{name}",
                )
            return value
    if default is not None:
        return default
    raise Refusal(
        Reason.INVALID,
        f"{where}: no label names the {what} (looked for {', '.join(names)}); add one to the alert rule or "
        f"map another label in CASEBOARD_TENANTS",
        field=where,
    )


def opening(group: AlertGroup, tenant_id: str, config: TenantConfig, where: str) -> it.Open:
    """The ``open`` item of the group's workspace: its scope from the labels by the tenant's mapping, its goal
    from the alert's summary, the tenant's default limits."""
    labels = group.labels or group.alerts[0].labels
    scope = it.Scope(
        tenant_id=tenant_id,
        environment=_label(labels, config.environment_labels, "environment", config.default_environment, where),
        service=_label(labels, config.service_labels, "service", None, where),
    )
    name = labels.get("alertname") or group.alerts[0].labels.get("alertname") or "the alert"
    goal = f"Find out why {name} fires" + (f": {group.summary}" if group.summary else "")
    return it.Open(
        type="open",
        scope=scope,
        goal=goal[: it.MAX_TEXT],
        runtime_limits=config.limits.runtime_limits(),
        execution_mode="read_only",
    )


def _statement(group: AlertGroup, alert: Alert, instance: str) -> str:
    name = alert.labels.get("alertname") or group.source
    if alert.status == "resolved":
        when = f"resolved at {alert.ends_at.isoformat() if alert.ends_at else 'an unknown time'}"
        text = f"{name} on {instance} {when} (firing since {alert.starts_at.isoformat()})"
    else:
        text = f"{name} firing on {instance} since {alert.starts_at.isoformat()}"
    if alert.summary:
        text += f": {alert.summary}"
    return text[: it.MAX_TEXT]


def observations(
    group: AlertGroup, stored: bytes, artifact_id: str, config: TenantConfig, seen: set[str] | frozenset[str]
) -> list[it.Observation]:
    """The observations a notification adds, leaving out those whose ids are in ``seen``: one per new alert
    notice, the first ``MAX_OBSERVED``, then one naming the rest (citing as many of their lines of ``stored``,
    the record, as an excerpt may hold). A firing alert is observed at its start, a
    resolved one at its end: a resolution is an observation, never a closure."""
    quality = "verified" if config.clock_trusted else "unverified"
    numbered = enumerate(group.alerts, start=2)  # line 1 is the group's
    new = [(line, alert) for line, alert in numbered if observation_id(group, alert) not in seen]
    made: list[it.Observation] = []
    for line, alert in new[:MAX_OBSERVED]:
        instance = alert.labels.get("instance") or alert.labels.get("pod") or alert.key
        raw: dict[str, Any] = {
            "type": "observation",
            "id": observation_id(group, alert),
            "statement": _statement(group, alert, instance),
            "source": {"system": group.source, "instance": instance[:256]},
            "event_time": (alert.ends_at if alert.status == "resolved" and alert.ends_at else alert.starts_at),
            "event_time_quality": quality,
            "evidence_ref": {"artifact": artifact_id, "lines": [line, line]},
            "scope": {"instances": [instance[:256]]},
        }
        made.append(it.Observation.model_validate(raw))
    rest = new[MAX_OBSERVED:]
    if rest:
        first, last = rest[0][0], rest[-1][0]
        sizes = [len(line) + 1 for line in stored.split(b"\n")]
        cited, size = first, sizes[first - 1]
        while cited < last and size + sizes[cited] <= MAX_EXCERPT_BYTES:
            size += sizes[cited]
            cited += 1
        ids = ",".join(observation_id(group, alert) for _, alert in rest)
        made.append(
            it.Observation.model_validate(
                {
                    "type": "observation",
                    "id": f"alert-rest-{_digest(ids)[:20]}",
                    "statement": (
                        f"{len(rest)} more alerts of this group were received and not observed one by one: "
                        f"lines {first}-{last} of the stored notification list them"
                    ),
                    "source": {"system": group.source, "instance": "alert-group"},
                    "event_time": min(alert.starts_at for _, alert in rest),
                    "event_time_quality": quality,
                    "evidence_ref": {"artifact": artifact_id, "lines": [first, cited]},
                }
            )
        )
    return made
