"""CASEBOARD_TENANTS: read once with the settings, every mistake one line naming the tenant and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from caseboard.domain.errors import ConfigurationError
from caseboard.settings import Settings
from caseboard.tenant_config import DEFAULT_LIMITS, load_tenants


def test_an_unnamed_tenant_gets_the_defaults_and_a_named_one_its_own(tmp_path: Path) -> None:
    path = tmp_path / "tenants.toml"
    path.write_text(
        '[tenants.acme]\nservice_labels = ["app"]\ndefault_environment = "staging"\n'
        "[tenants.acme.limits]\nmax_investigation_cycles = 2\n"
    )
    config = load_tenants(str(path))
    assert config.of("acme").service_labels == ("app",)
    assert config.of("acme").limits.runtime_limits().max_investigation_cycles == 2
    assert config.of("acme").limits.runtime_limits().max_open_questions == DEFAULT_LIMITS.max_open_questions
    assert config.of("other").service_labels == ("service", "job")
    assert load_tenants(None).of("acme").limits.runtime_limits() == DEFAULT_LIMITS


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[tenants.acme]\nservice_labels = 'app'\n", "tenants.acme.service_labels"),
        ("[tenants.acme]\nwebhook = 'x'\n", "tenants.acme.webhook: Extra inputs are not permitted"),
        ("[tenants.acme.limits]\nmax_proposals = 0\n", "tenants.acme.limits.max_proposals"),
        ("[tenants.acme\n", "is not valid TOML"),
        ("[tenants.'a b']\n", "tenants.a b"),
    ],
)
def test_a_bad_file_stops_the_start_with_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "tenants.toml"
    path.write_text(text)
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_env({"CASEBOARD_TENANTS": str(path)})
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_every_problem_of_a_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "tenants.toml"
    path.write_text("[tenants.acme]\nclock_trusted = 'maybe'\ntenant_label = ''\n")
    with pytest.raises(ConfigurationError) as caught:
        load_tenants(str(path))
    assert "tenants.acme.clock_trusted" in str(caught.value) and "tenants.acme.tenant_label" in str(caught.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot be read"):
        load_tenants(str(tmp_path / "nowhere.toml"))
