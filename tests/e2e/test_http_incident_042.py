"""incident-042 submitted over HTTP, one key per participant, gives the projection the command line gives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
import yaml

from caseboard.cli.main import main
from tests.conftest import scenario_dir, scenario_lines, stale_install
from tests.golden.test_incident_042 import contains
from tests.http_server import RunningServer, running_server


@pytest.fixture(autouse=True)
def logging_restored() -> Iterator[None]:
    """The command line configures logging onto the captured stderr; later tests must not write to it."""
    yield
    structlog.reset_defaults()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    with running_server(f"sqlite:///{tmp_path}/http.db", trust_timestamps=True) as running:
        yield running


def play_over_http(server: RunningServer) -> list[Any]:
    clients: dict[str, Any] = {}
    statuses = []
    lines = scenario_lines()
    for number, line in enumerate(lines, 1):
        contribution = json.loads(line)
        author = contribution.pop("author")
        if author["principal"] not in clients:
            clients[author["principal"]] = server.as_(author["principal"], author["role"])
        client = clients[author["principal"]]
        if number == len(lines):
            stale = json.loads(stale_install())
            stale.pop("author")
            refused = client.post("/workspaces/incident-042/contributions", json=stale)
            statuses.append((refused.status_code, refused.json()["reason"], refused.json()["current_version"]))
        if contribution["items"][0]["type"] == "open":
            item = contribution.pop("items")[0]
            item.pop("type")
            response = client.post("/workspaces", json={**contribution, **item})
        else:
            response = client.post(f"/workspaces/{contribution.pop('workspace_id')}/contributions", json=contribution)
        assert response.status_code == 201, (number, response.text)
        statuses.append(response.json()["workspace_version"])
    return statuses


def test_incident_042_over_http_gives_the_projection_of_the_command_line(
    server: RunningServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    statuses = play_over_http(server)
    assert statuses == [*range(1, 20), (409, "version_conflict", 19), 20]

    cli_url = f"sqlite:///{tmp_path}/cli.db"
    lines = scenario_lines()
    (tmp_path / "first.jsonl").write_text("\n".join(lines[:19]) + "\n")
    (tmp_path / "stale.jsonl").write_text(stale_install().strip() + "\n")
    (tmp_path / "last.jsonl").write_text(lines[19] + "\n")
    assert (
        main(
            [
                "--database-url",
                cli_url,
                "submit",
                "incident-042",
                "--file",
                str(tmp_path / "first.jsonl"),
                "--trust-timestamps",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "--database-url",
                cli_url,
                "submit",
                "incident-042",
                "--file",
                str(tmp_path / "stale.jsonl"),
                "--trust-timestamps",
            ]
        )
        == 1
    )
    assert (
        main(
            [
                "--database-url",
                cli_url,
                "submit",
                "incident-042",
                "--file",
                str(tmp_path / "last.jsonl"),
                "--trust-timestamps",
            ]
        )
        == 0
    )
    capsys.readouterr()
    for version in (18, 19, 20):
        assert main(["--database-url", cli_url, "show", "incident-042", "--at-version", str(version)]) == 0
        through_cli = json.loads(capsys.readouterr().out)
        reader = server.as_(f"auditor-{version}", "reporter")
        over_http = reader.get("/workspaces/incident-042", params={"version": version}).json()
        assert over_http == through_cli

    reader = server.as_("auditor", "reporter")
    as_yaml = reader.get("/workspaces/incident-042", headers={"Accept": "application/yaml"})
    assert as_yaml.headers["content-type"].startswith("application/yaml")
    expected = yaml.safe_load((scenario_dir() / "incident-042.v20.yaml").read_text())
    current = yaml.safe_load(as_yaml.text)  # the current reducer agrees with the document on every other key
    assert contains(current, {**expected, "reducer_version": current["reducer_version"]}) == []
    named = reader.get(
        "/workspaces/incident-042",
        params={"reducer": expected["reducer_version"]},
        headers={"Accept": "application/yaml"},
    )
    assert contains(yaml.safe_load(named.text), expected) == []
    assert main(["--database-url", cli_url, "timeline", "incident-042"]) == 0
    cli_timeline = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert reader.get("/workspaces/incident-042/timeline").json()["entries"] == cli_timeline
