"""``make soak`` in half a minute: the same script, its faults closer together (a database crash every 12 s, a
Redis restart every 10 s, a server kill every 17 s). It checks that every acknowledged commit is in the ledger
at the version its writer was told; this test holds that check to the ledger's keys as they are stored (a
tenant's workspace under ``<tenant>/<id>``), which the 30-minute run alone did not, and to the script's exit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

ROOT = Path(__file__).resolve().parents[2]
FAULTS = ("--outage-every", "12", "--outage-s", "2", "--broker-every", "10", "--kill-every", "17")


def test_a_short_soak_loses_nothing_acknowledged_through_every_kind_of_fault() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "soak.py"), "--minutes", "0.5", *FAULTS],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 0, report
    assert report["commits_acknowledged"] > 100 and report["lost"] == 0 and not report["workspaces_with_gaps"]
    assert report["recovered_outages"] >= 1 and report["broker_restarts"] >= 1 and report["server_kills"] >= 1
    assert report["outbox"]["unprocessed"] == 0 and report["outbox"]["pending"] == 0
