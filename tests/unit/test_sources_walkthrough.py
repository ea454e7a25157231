"""docs/sources.md's walkthrough runs: its plugin, installed as ``pip install`` leaves a distribution, is found
through the ``caseboard.sources`` entry point its pyproject names, configured by the doc's TOML, and answers a
work request whose result cites the calendar's lines."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from caseboard.sources.config import load_sources
from caseboard.sources.registry import SOURCES
from tests.sources.board import embedded, excerpt, request_and_answer, specialist

DOC = Path(__file__).resolve().parents[2] / "docs" / "sources.md"
CALENDAR = (
    '{"id": "CHG-5531", "at": "2026-03-02T14:00:00+00:00", "service": "payments-api", "what": "certificate rotated"}\n'
    '{"id": "CHG-5530", "at": "2026-03-02T09:00:00+00:00", "service": "payments-api", "what": "config reload"}\n'
    '{"id": "CHG-5532", "at": "2026-03-02T14:10:00+00:00", "service": "ledger-api", "what": "deploy"}\n'
)


def blocks(language: str) -> list[str]:
    section = DOC.read_text().split("## Writing a source plugin", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    [plugin] = blocks("python")
    entry_point, configuration = blocks("toml")
    points = tomllib.loads(entry_point)["project"]["entry-points"]["caseboard.sources"]
    site = tmp_path / "site"
    module = points["calendar"].split(":")[0]
    (site / module).mkdir(parents=True)
    (site / module / "__init__.py").write_text(plugin)
    info = site / "acme_calendar-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-calendar\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[caseboard.sources]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "changes.jsonl").write_text(CALENDAR)
    (tmp_path / "sources.toml").write_text(configuration)
    SOURCES.refresh()
    yield tmp_path / "sources.toml"
    SOURCES.refresh()


def test_the_walkthrough_plugin_answers_a_request_and_its_finding_cites_the_calendar_line(
    installed: Path, tmp_path: Path
) -> None:
    tenant, sources = load_sources(installed).tenant(None)
    config = sources.sources["changes"]
    with embedded(tmp_path) as app:
        who = specialist(app, "changes", config, tenant)
        assert who.kinds == ("change_calendar",)
        asked = {"service": "payments-api", "start": "2026-03-02T12:00:00Z", "end": "2026-03-02T14:30:00Z"}
        items = request_and_answer(app, who, "change-query-002", "change_calendar", asked)[-1].items
        result = items[0]
        assert result.status == "completed" and result.query.completed is True
        assert len(items) == 1  # CHG-5530 is outside the range, CHG-5532 another service
        observation = result.observation
        assert observation.statement == "CHG-5531: certificate rotated on payments-api"
        assert observation.event_time_quality == "verified"
        assert excerpt(app, observation.evidence_ref).decode() == CALENDAR.splitlines()[0] + "\n"
