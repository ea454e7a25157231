"""The sources' configuration: one file, validated at start, every mistake named on one line, exit 2."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from caseboard.domain.errors import ConfigurationError
from caseboard.sources.base import SourcePlugin
from caseboard.sources.config import load_sources
from caseboard.sources.record import ask, record, redact
from caseboard.sources.registry import SOURCES, SourceRegistry
from tests.sources.servers import FaultServer

GOOD_TOML = """
[tenants.tenant-a.sources.prom]
type = "prometheus"
endpoint = "http://127.0.0.1:9090"
clock_trusted = true
credential = { env = "PROM_TOKEN" }
guardrails = { max_range_s = 3600, max_series = 50, max_bytes = 1000000, timeout_s = 5 }

[tenants.tenant-a.sources.certs]
type = "tls"
kinds = ["certificate_check", "tls_check"]
options = { allowed = ["127.0.0.1:8443"] }

[tenants.tenant-b.sources.prom]
type = "prometheus"
endpoint = "http://127.0.0.1:9091"
"""

GOOD_YAML = """
tenants:
  tenant-a:
    sources:
      prom:
        type: prometheus
        endpoint: http://127.0.0.1:9090
        credential: {file: SECRET_FILE}
"""


def test_a_toml_file_gives_each_tenant_its_sources_guardrails_and_credentials_by_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROM_TOKEN", "s3cret-token")
    path = tmp_path / "sources.toml"
    path.write_text(GOOD_TOML)
    loaded = load_sources(path)
    tenant, sources = loaded.tenant("tenant-a")
    prom = sources.sources["prom"]
    assert (tenant, prom.type, prom.clock_trusted) == ("tenant-a", "prometheus", True)
    assert prom.guardrails.max_range_s == 3600 and prom.guardrails.timeout_s == 5
    assert prom.credential is not None and prom.credential.headers() == {"Authorization": "Bearer s3cret-token"}
    assert "s3cret-token" not in repr(loaded)  # the file holds a reference, never the secret
    built = SOURCES.build("certs", sources.sources["certs"])
    assert built.kinds == ("certificate_check", "tls_check")
    assert SOURCES.build("prom", prom).kinds == ("metrics_query",)
    with pytest.raises(ConfigurationError, match=r"2 tenants .*--tenant"):
        loaded.tenant(None)
    with pytest.raises(ConfigurationError, match="no tenant 'tenant-c'"):
        loaded.tenant("tenant-c")


def test_a_yaml_file_with_a_credential_file(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text("file-secret\n")
    path = tmp_path / "sources.yaml"
    path.write_text(GOOD_YAML.replace("SECRET_FILE", str(secret)))
    tenant, sources = load_sources(path).tenant(None)
    credential = sources.sources["prom"].credential
    assert tenant == "tenant-a" and credential is not None and credential.secret() == "file-secret"


def test_every_mistake_is_named_with_its_path_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    path = tmp_path / "sources.toml"
    path.write_text(
        """
[tenants.tenant-a.sources.prom]
type = "prometheus"
credential = { env = "NOT_SET_ANYWHERE" }
guardrails = { max_bytes = -1, timeout = 3 }
colour = "blue"
"""
    )
    with pytest.raises(ConfigurationError) as caught:
        load_sources(path)
    message = str(caught.value)
    assert "\n" not in message
    for mistake in (
        "tenants.tenant-a.sources.prom.credential: Value error, the environment variable NOT_SET_ANYWHERE is not set",
        "tenants.tenant-a.sources.prom.guardrails.max_bytes: Input should be greater than 0",
        "tenants.tenant-a.sources.prom.guardrails.timeout: Extra inputs are not permitted",
        "tenants.tenant-a.sources.prom.colour: Extra inputs are not permitted",
    ):
        assert mistake in message


def test_an_unknown_plugin_and_a_plugin_s_bad_options_are_named(tmp_path: Path) -> None:
    path = tmp_path / "sources.toml"
    path.write_text(
        """
[tenants.t.sources.a]
type = "graphite"
[tenants.t.sources.b]
type = "tls"
options = { allowed = "127.0.0.1:1", extra = 1 }
"""
    )
    with pytest.raises(ConfigurationError) as caught:
        load_sources(path)
    message = str(caught.value)
    assert (
        "tenants.t.sources.a.type: no source plugin 'graphite' (there are alertmanager, logs, mcp, prometheus, tls)"
        in message
    )
    assert "tenants.t.sources.b.options.allowed: Input should be a valid list" in message
    assert "tenants.t.sources.b.options.extra: Extra inputs are not permitted" in message


def test_a_file_that_is_not_toml_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "sources.toml"
    path.write_text("[tenants\n")
    with pytest.raises(ConfigurationError, match=r"sources.toml: not valid toml"):
        load_sources(path)
    with pytest.raises(ConfigurationError, match="cannot be read"):
        load_sources(tmp_path / "missing.toml")


def test_the_command_line_says_a_mistake_in_one_line_with_exit_status_2(tmp_path: Path) -> None:
    path = tmp_path / "sources.toml"
    path.write_text('[tenants.t.sources.a]\ntype = "prometheus"\nendpoint = 3\n')
    env = {"CASEBOARD_SOURCES": str(path), "CASEBOARD_DATABASE_URL": f"sqlite:///{tmp_path}/ledger.db", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-m", "caseboard", "specialist", "--source", "a"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "tenants.t.sources.a.endpoint: Input should be a valid string" in done.stderr
    unset = {k: v for k, v in env.items() if k != "CASEBOARD_SOURCES"}
    done = subprocess.run(
        [sys.executable, "-m", "caseboard", "specialist", "--source", "a"], env=unset, capture_output=True, text=True
    )
    assert done.returncode == 2 and "CASEBOARD_SOURCES is not set" in done.stderr


def test_a_source_message_loses_its_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROM_TOKEN", "tok-123")
    path = tmp_path / "sources.toml"
    path.write_text(GOOD_TOML)
    credential = load_sources(path).tenant("tenant-a")[1].sources["prom"].credential
    said = "401 for https://user:pa55@prom.example/api?token=abc&x=1 with Bearer tok-123"
    cleaned = redact(said, credential)
    for secret in ("pa55", "user:", "abc", "tok-123"):
        assert secret not in cleaned
    assert "https://[redacted]@prom.example/api?token=[redacted]&x=1" in cleaned


def test_a_credential_no_http_header_can_carry_is_named_at_start_and_never_quoted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "sources.toml"
    monkeypatch.setenv("PROM_TOKEN", "tok\nline-2")
    path.write_text(GOOD_TOML.replace('{ env = "PROM_TOKEN" }', '{ env = "PROM_TOKEN", header = "X Token:" }'))
    with pytest.raises(ConfigurationError, match=r"prom\.credential\.header: String should match pattern"):
        load_sources(path)
    path.write_text(GOOD_TOML)
    with pytest.raises(ConfigurationError) as raised:
        load_sources(path)
    said = str(raised.value)
    assert "the environment variable PROM_TOKEN holds a control character, which no HTTP header may carry" in said
    assert "line-2" not in said


def test_a_credential_changed_after_start_to_an_unsendable_one_fails_the_query_without_quoting_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """httpx refused it quoting the header (``Illegal header value b'Bearer tok\\nline-2'``), which the redaction of
    the secret as read did not match: a part of the secret reached the result."""
    monkeypatch.setenv("PROM_TOKEN", "tok-123")
    server = FaultServer()  # listening: httpx checks a header's value once connected
    path = tmp_path / "sources.toml"
    path.write_text(GOOD_TOML.replace('endpoint = "http://127.0.0.1:9090"', f'endpoint = "{server.url}/warn"'))
    config = load_sources(path).tenant("tenant-a")[1].sources["prom"]
    source = SOURCES.build("prom", config)
    try:
        monkeypatch.setenv("PROM_TOKEN", "tok\nline-2")  # rotated, badly, while the specialist runs
        ran = ask(source, "up", config)
        recorded = record(ran, name="prom", config=config, request_id="m-1", generation=1,
                          store=lambda data, media: "sha256:" + "0" * 64, now=datetime.now(UTC))  # fmt: skip
    finally:
        source.close()
        server.close()
    summary = recorded.items[0]["summary"]
    assert recorded.items[0]["status"] == "failed"
    assert "the environment variable PROM_TOKEN holds a control character" in summary
    assert "line-2" not in summary and "tok" not in summary


def test_a_plugin_registered_under_the_entry_point_group_is_found_and_checked() -> None:
    registry = SourceRegistry(built_in={"mine": "tests.unit.test_sources_config:MINE", "bad": "os:path"})
    assert list(registry) == sorted({"mine", "bad", *(p.name for p in _entry_points())})
    assert registry.plugin("mine") is MINE
    with pytest.raises(ConfigurationError, match=r"is not a caseboard\.sources\.SourcePlugin"):
        registry.plugin("bad")
    with pytest.raises(ConfigurationError, match="no source plugin 'nope'"):
        registry.plugin("nope")


def _entry_points() -> list[object]:
    from importlib.metadata import entry_points

    return list(entry_points(group="caseboard.sources"))


MINE = SourcePlugin("mine", lambda name, config, options: None)  # type: ignore[arg-type,return-value]
