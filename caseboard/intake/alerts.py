"""What an alerting system sends, parsed strictly: Alertmanager's webhook (version 4) and caseboard's generic
shape (docs/pilot.md), both read into one ``AlertGroup``.

Fields caseboard reads are validated (types, sizes, no control characters); fields it does not read are
ignored at the top level and in each alert, so that a newer Alertmanager that adds one is not refused.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints, field_validator

PRINTABLE = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"
"""Text with no NUL and no control character but tab and line breaks (what a ledger row can hold as is)."""
LabelText = Annotated[str, StringConstraints(max_length=4096, pattern=PRINTABLE)]
LabelName = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=PRINTABLE)]
Labels = Annotated[dict[LabelName, LabelText], Field(max_length=256)]
MAX_ALERTS = 10_000
"""The most alerts one notification may carry (Alertmanager's ``max_alerts`` bounds what it sends)."""
NEVER = datetime(1, 1, 1).year
"""Alertmanager sends ``endsAt`` ``0001-01-01T00:00:00Z`` for an alert that has not ended."""


class _Lenient(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class AlertmanagerAlert(_Lenient):
    status: Literal["firing", "resolved"]
    labels: Labels
    annotations: Labels = {}
    startsAt: AwareDatetime
    endsAt: AwareDatetime | None = None
    generatorURL: LabelText = ""
    fingerprint: Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$")]

    @field_validator("endsAt")
    @classmethod
    def _not_ended(cls, value: datetime | None) -> datetime | None:
        return None if value is not None and value.year == NEVER else value


class AlertmanagerPayload(_Lenient):
    """Alertmanager's webhook body, version 4."""

    version: Literal["4"]
    groupKey: Annotated[str, StringConstraints(min_length=1, max_length=4096, pattern=PRINTABLE)]
    status: Literal["firing", "resolved"]
    receiver: LabelText = ""
    groupLabels: Labels = {}
    commonLabels: Labels = {}
    commonAnnotations: Labels = {}
    externalURL: LabelText = ""
    truncatedAlerts: int = Field(default=0, ge=0)
    alerts: Annotated[list[AlertmanagerAlert], Field(min_length=1, max_length=MAX_ALERTS)]


class GenericAlert(_Lenient):
    id: Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$")]
    """The alert's stable id in the sending system (with its times and status, what makes a notice new)."""
    status: Literal["firing", "resolved"]
    labels: Labels = {}
    summary: LabelText = ""
    starts_at: AwareDatetime
    ends_at: AwareDatetime | None = None
    url: LabelText = ""


class GenericPayload(_Lenient):
    """caseboard's generic alert shape (docs/pilot.md): one group of alerts from any alerting system."""

    source: Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9._-]*$")]
    """The sending system (`grafana`, `pagerduty`, ...): the observations' source system."""
    group: Annotated[str, StringConstraints(min_length=1, max_length=4096, pattern=PRINTABLE)]
    """What groups these alerts into one investigation (Alertmanager's groupKey)."""
    labels: Labels = {}
    """Labels common to the group (service, environment, tenant)."""
    summary: LabelText = ""
    alerts: Annotated[list[GenericAlert], Field(min_length=1, max_length=MAX_ALERTS)]


class Alert(BaseModel):
    """One alert as caseboard records it, whatever sent it."""

    model_config = ConfigDict(frozen=True)

    key: str
    status: str
    labels: dict[str, str]
    summary: str
    starts_at: datetime
    ends_at: datetime | None
    url: str

    def notice(self) -> tuple[str, str, str, str]:
        """What makes a notice of this alert new: its key, status and times (a re-send repeats all four)."""
        ends = "" if self.ends_at is None else self.ends_at.isoformat()
        return (self.key, self.status, self.starts_at.isoformat(), ends)


class AlertGroup(BaseModel):
    """One notification: a group of alerts from ``source`` under the group key ``group``."""

    model_config = ConfigDict(frozen=True)

    source: str
    group: str
    labels: dict[str, str]
    summary: str
    alerts: tuple[Alert, ...]
    external_url: str = ""

    @classmethod
    def of_alertmanager(cls, payload: AlertmanagerPayload) -> AlertGroup:
        alerts = tuple(
            Alert(
                key=alert.fingerprint,
                status=alert.status,
                labels={**payload.commonLabels, **alert.labels},
                summary=alert.annotations.get("summary") or alert.annotations.get("description") or "",
                starts_at=alert.startsAt,
                ends_at=alert.endsAt,
                url=alert.generatorURL,
            )
            for alert in payload.alerts
        )
        summary = payload.commonAnnotations.get("summary") or next((a.summary for a in alerts if a.summary), "")
        labels = {**payload.groupLabels, **payload.commonLabels}
        return cls(
            source="alertmanager",
            group=payload.groupKey,
            labels=labels,
            summary=summary,
            alerts=alerts,
            external_url=payload.externalURL,
        )

    @classmethod
    def of_generic(cls, payload: GenericPayload) -> AlertGroup:
        alerts = tuple(
            Alert(
                key=alert.id,
                status=alert.status,
                labels={**payload.labels, **alert.labels},
                summary=alert.summary,
                starts_at=alert.starts_at,
                ends_at=alert.ends_at,
                url=alert.url,
            )
            for alert in payload.alerts
        )
        summary = payload.summary or next((a.summary for a in alerts if a.summary), "")
        labels = dict(payload.labels)
        return cls(source=payload.source, group=payload.group, labels=labels, summary=summary, alerts=alerts)
