"""A schema 1 export imported under its bare id belongs to the tenant its scope names: the command line finds
it as ``TENANT/ID``, as that tenant's keys find it over HTTP, and another tenant's name finds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from caseboard.cli.main import main

EXPORT = Path(__file__).parents[2] / "corpus" / "incident-042.jsonl"


def test_the_command_line_names_a_bare_import_by_its_tenant_as_http_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    assert main(["--database-url", url, "import", str(EXPORT)]) == 0
    capsys.readouterr()
    assert main(["--database-url", url, "verify", "tenant-a/incident-042"]) == 0
    assert "intact, 20 commits" in capsys.readouterr().out
    assert main(["--database-url", url, "show", "tenant-a/incident-042", "--at-version", "3"]) == 0
    shown = capsys.readouterr().out
    assert "incident-042" in shown and "workspace_version: 3" in shown.replace('"', "").replace(",", "")
    assert main(["--database-url", url, "verify", "tenant-b/incident-042"]) == 2
    assert "tenant-b/incident-042" in capsys.readouterr().err
