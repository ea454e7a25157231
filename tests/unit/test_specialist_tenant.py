"""``caseboard specialist`` acts for its source's tenant only (docs/adr/0157, 0183): another tenant's work request
is passed on to that tenant's processes, neither begun nor marked processed for the specialist's queue, so the
other tenant's specialist of the same kind still gets it; its own tenant's is processed."""

from __future__ import annotations

from pathlib import Path

from caseboard.cli.specialist_cmds import specialist_host
from caseboard.dispatcher.broker import Elsewhere
from caseboard.dispatcher.notification import specialist_queue
from caseboard.dispatcher.store import DispatchStore
from caseboard.sources.config import SourceConfig
from tests.sources.board import WORKSPACE, embedded, specialist, submit, work_requested

CERTS = SourceConfig(type="tls", kinds=("certificate_check",), options={"allowed": ["127.0.0.1:9"]})


def test_a_specialist_of_another_tenant_passes_the_work_request_on_unprocessed(tmp_path: Path) -> None:
    with embedded(tmp_path) as app:  # incident-042 is tenant A's
        asked = submit(
            app,
            "planner-1",
            "planner",
            [{"type": "work_request", "request_id": "cert-1", "kind": "certificate_check", "target": "127.0.0.1:9"}],
        )
        store = DispatchStore(app.database_url)
        try:
            body = work_requested(asked.workspace_version, "cert-1", "certificate_check").model_dump(exclude_none=True)
            theirs = specialist_host(app, store, specialist(app, "certs", CERTS, tenant="tenant-b"))
            assert theirs.handle(body) == Elsewhere(specialist_queue("certificate_check"), "tenant-a")
            assert store.processed_ids() == []
            ours = specialist_host(app, store, specialist(app, "certs", CERTS, tenant="tenant-a"))
            assert ours.handle(body) is None
            assert store.processed_ids() == [(specialist_queue("certificate_check"), body["id"], 1)]
            assert app.ledger.head(WORKSPACE) > asked.workspace_version  # tenant A's specialist answered it
        finally:
            store.close()
