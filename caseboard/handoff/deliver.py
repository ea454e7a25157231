"""Delivering a handoff to a tenant's webhooks, at least once (docs/pilot.md).

The dispatcher routes a ``handoff`` notification for each commit that hands a workspace to a person
(``dispatcher/route.py``); the plain worker's consumer host calls ``Deliverer.deliver`` with it. Each webhook's
attempt is recorded with its outcome (``DispatchStore.handoff_attempted``) before the next is made; a webhook
that took the handoff is not sent it again; one that did not makes ``deliver`` raise ``Undelivered``, and
dramatiq retries the message with backoff. A handoff delivered twice (a worker killed after the receiver
answered, before the record) carries the same ``Caseboard-Delivery`` id: the receiver drops the second.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx
import structlog

from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.store import DispatchStore
from caseboard.domain.errors import CaseboardError
from caseboard.domain.workspace_key import tenant_part
from caseboard.handoff.document import build, slack_text
from caseboard.handoff.signing import DELIVERY_HEADER, SIGNATURE_HEADER, sign
from caseboard.tenant_config import TenantsConfig, Webhook

log = structlog.get_logger("caseboard.handoff")


class Undelivered(CaseboardError):
    """A webhook did not take a handoff: the message is retried (the attempts are on record)."""


Project = Callable[[str, int], dict[str, Any]]
"""The projection of a workspace (its key) at a version."""


class Deliverer:
    def __init__(
        self,
        store: DispatchStore,
        tenants: TenantsConfig,
        project: Project,
        *,
        client: httpx.Client | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.tenants = tenants
        self.project = project
        self.client = client or httpx.Client(follow_redirects=False)
        self.clock = clock

    def deliver(self, notification: Notification) -> None:
        key, version = notification.workspace_id, notification.workspace_version
        projection = self.project(key, version)
        tenant = tenant_part(key) or str(projection["scope"]["tenant_id"])
        config = self.tenants.of(tenant)
        if not config.webhooks:
            log.info("handoff_without_webhook", workspace_id=key, workspace_version=version, tenant_id=tenant)
            return
        at = datetime.fromisoformat(str(projection["as_of"]).replace("Z", "+00:00"))
        handoff = build(key, projection, at, notification.subject or projection["status"], config.public_url)
        done = self.store.handoff_delivered(handoff.id)
        failed = []
        for hook in config.webhooks:
            where = hook.where()
            if where in done:
                continue
            outcome, detail = self._post(hook, handoff.body(), handoff.id, handoff)
            attempt = self.store.handoff_attempted(handoff.id, key, where, outcome, detail)
            log.info("handoff_attempt", handoff_id=handoff.id, webhook=where, attempt=attempt, outcome=outcome)
            if outcome != "delivered":
                failed.append(f"{where}: {detail}")
        if failed:
            raise Undelivered(f"handoff {handoff.id} not delivered to {'; '.join(failed)}")

    def _post(self, hook: Webhook, body: bytes, handoff_id: str, handoff: Any) -> tuple[str, str]:
        headers = {"Content-Type": "application/json", DELIVERY_HEADER: handoff_id}
        if hook.format == "slack":
            body = httpx.Request("POST", hook.url, json=slack_text(handoff)).read()
        secret = hook.secret()
        if secret is None and hook.format == "caseboard":
            return "failed", f"the signing secret ({hook.secret_env or hook.secret_file}) is not available"
        if secret is not None:
            headers[SIGNATURE_HEADER] = sign(secret, body, int(self.clock()))
        try:
            response = self.client.post(hook.url, content=body, headers=headers, timeout=hook.timeout_s)
        except httpx.HTTPError as error:
            return "failed", f"{type(error).__name__}: no answer"
        if 200 <= response.status_code < 300:
            return "delivered", f"HTTP {response.status_code}"
        return "failed", f"HTTP {response.status_code}"

    def close(self) -> None:
        self.client.close()
