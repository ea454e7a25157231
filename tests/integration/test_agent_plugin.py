"""The model-backed cast is the ``model`` entry point of ``caseboard.participants``: a worker loads it by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from caseboard.agent.participant import ModelParticipant
from caseboard.domain.errors import ConfigurationError
from caseboard.workers.plugins import available, load_participants


def test_the_model_entry_point_gives_the_cast_by_audience_configured_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CASEBOARD_DATABASE_URL", f"sqlite:///{tmp_path}/ledger.db")
    monkeypatch.setenv("CASEBOARD_MODEL_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("CASEBOARD_MODEL", "some-model")
    assert "model" in available()
    cast = load_participants(["model"], ("log_query", "certificate_check"))
    try:
        assert {a: p.principal for a, p in cast.items()} == {
            "planner": "planner-1",
            "verifier": "verifier-1",
            "reporter": "reporter-1",
            "specialist:log_query": "log-query-specialist",
            "specialist:certificate_check": "certificate-check-specialist",
        }
        assert all(isinstance(p, ModelParticipant) and p.model.name == "some-model" for p in cast.values())
        specialist = cast["specialist:log_query"]
        assert isinstance(specialist, ModelParticipant) and specialist.kinds == ("log_query",)
    finally:
        apps = {id(p.board.app): p.board.app for p in cast.values() if isinstance(p, ModelParticipant)}
        assert len(apps) == 1  # the cast shares one app
        for app in apps.values():
            app.close()


def test_the_model_entry_point_without_an_endpoint_names_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CASEBOARD_DATABASE_URL", f"sqlite:///{tmp_path}/ledger.db")
    monkeypatch.delenv("CASEBOARD_MODEL_URL", raising=False)
    with pytest.raises(ConfigurationError, match="CASEBOARD_MODEL_URL"):
        load_participants(["model"], ("log_query",))
    assert not (tmp_path / "ledger.db").exists()  # nothing was opened
