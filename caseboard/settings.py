"""Configuration, read once from the environment into a frozen object and passed down."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from caseboard.database_url import DatabaseUrl
from caseboard.domain.errors import ConfigurationError, UnknownReducer
from caseboard.domain.text import FIELD_VALUE_REFUSED
from caseboard.tenant_config import TenantsConfig, load_tenants

if TYPE_CHECKING:
    from caseboard.reducers import Reducer

DEFAULT_DATABASE_URL = "sqlite:///.caseboard/ledger.db"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_REDUCER = "workspace-rules-v4"
"""``caseboard.reducers.CURRENT``, spelled here so that reading the settings imports no reducer (a test holds
them equal)."""


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    redis_url: str = DEFAULT_REDIS_URL
    log_level: str = "info"
    log_format: str = "auto"
    pool_size: int = 4
    redis_namespace: str = "caseboard"
    heartbeat_ms: int = 60_000
    worker_poll_ms: int = 500
    artifact_max_bytes: int = 256 * 1024 * 1024
    trust_timestamps: bool = False
    """Decide with a contribution's own ``at`` rather than the server's clock (``CASEBOARD_TRUST_TIMESTAMPS=1``,
    ``caseboard serve --trust-timestamps``): for replaying recorded incidents."""
    dispatch_test_hook: str | None = None
    """A fault the dispatcher plays for the crash tests (``CASEBOARD_DISPATCH_TEST_HOOK``; never in production)."""
    worker_test_hook: str | None = None
    """A fault a worker plays for the crash tests (``CASEBOARD_WORKER_TEST_HOOK``; never in production)."""
    model_url: str | None = None
    """An OpenAI-compatible endpoint for model-backed participants (``caseboard agent``; docs/participants.md)."""
    model: str | None = None
    model_api_key: str | None = None
    model_timeout_s: int = 30
    model_retries: int = 2
    model_calls_per_cycle: int = 12
    """A workspace's model budget: this many calls, and ``model_tokens_per_cycle`` tokens, per investigation cycle."""
    model_tokens_per_cycle: int = 40_000
    tenants_file: str | None = None
    """The pilot loop's per-tenant configuration (``CASEBOARD_TENANTS``, TOML; ``caseboard/tenant_config.py``)."""
    sources_path: str | None = None
    """The diagnostic sources' configuration file (``CASEBOARD_SOURCES``, TOML or YAML; docs/sources.md)."""
    chain_recheck_s: int = 300
    """A server re-verifies the chain under each cached workspace this often (``CASEBOARD_CHAIN_RECHECK_S``,
    ADR 0144): a row altered after its state was cached is found within this many seconds."""
    metrics_token: str | None = None
    """Who may read ``GET /metrics`` (totals across tenants, ADR 0141): a client sending ``Authorization: Bearer
    <this>`` (``CASEBOARD_METRICS_TOKEN``); without it, only clients on the server's loopback interface."""

    snapshot_key: str | None = None
    """The key snapshots are signed with (``CASEBOARD_SNAPSHOT_KEY``, ADR 0142): with it, a snapshot written to the
    database by anyone without it is not used. Every process of a deployment needs the same one."""
    stall_after_s: int = 900
    """A workspace in which no participant has contributed for this long escalates to ``human_review_required``
    with a handoff saying what stalled (``CASEBOARD_STALL_AFTER_S``; the controller's, docs/adr/0159)."""
    cache_commits: int = 250_000
    """The commits a process's cache of workspace states may hold between them (``CASEBOARD_CACHE_COMMITS``,
    ``projections/workspaces.py``'s ``CACHE_COMMITS``; ADR 0182): ~550 bytes each for observations."""
    reducer: str = DEFAULT_REDUCER
    """The current reducer (``CASEBOARD_REDUCER``, a registered name, docs/reducers.md): the coordinator decides
    with it, routing and the model view judge with it, and every read and command that names none shows it.
    Checked against the registry at start (ADR 0170)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        settings = cls(
            database_url=env.get("CASEBOARD_DATABASE_URL") or DEFAULT_DATABASE_URL,
            redis_url=env.get("CASEBOARD_REDIS_URL") or DEFAULT_REDIS_URL,
            log_level=(env.get("CASEBOARD_LOG_LEVEL") or "info").lower(),
            log_format=(env.get("CASEBOARD_LOG_FORMAT") or "auto").lower(),
            pool_size=_int(env, "CASEBOARD_POOL_SIZE", 4),
            redis_namespace=env.get("CASEBOARD_REDIS_NAMESPACE") or "caseboard",
            heartbeat_ms=_int(env, "CASEBOARD_DRAMATIQ_HEARTBEAT_MS", 60_000),
            worker_poll_ms=_int(env, "CASEBOARD_WORKER_POLL_MS", 500),
            artifact_max_bytes=_int(env, "CASEBOARD_ARTIFACT_MAX_BYTES", 256 * 1024 * 1024),
            trust_timestamps=_flag(env, "CASEBOARD_TRUST_TIMESTAMPS"),
            dispatch_test_hook=env.get("CASEBOARD_DISPATCH_TEST_HOOK") or None,
            worker_test_hook=env.get("CASEBOARD_WORKER_TEST_HOOK") or None,
            model_url=env.get("CASEBOARD_MODEL_URL") or None,
            model=env.get("CASEBOARD_MODEL") or None,
            model_api_key=env.get("CASEBOARD_MODEL_API_KEY") or None,
            model_timeout_s=_int(env, "CASEBOARD_MODEL_TIMEOUT_S", 30),
            model_retries=_int(env, "CASEBOARD_MODEL_RETRIES", 2),
            model_calls_per_cycle=_int(env, "CASEBOARD_MODEL_CALLS_PER_CYCLE", 12),
            model_tokens_per_cycle=_int(env, "CASEBOARD_MODEL_TOKENS_PER_CYCLE", 40_000),
            tenants_file=env.get("CASEBOARD_TENANTS") or None,
            sources_path=env.get("CASEBOARD_SOURCES") or None,
            chain_recheck_s=_int(env, "CASEBOARD_CHAIN_RECHECK_S", 300),
            metrics_token=env.get("CASEBOARD_METRICS_TOKEN") or None,
            snapshot_key=env.get("CASEBOARD_SNAPSHOT_KEY") or None,
            stall_after_s=_int(env, "CASEBOARD_STALL_AFTER_S", 900),
            cache_commits=_int(env, "CASEBOARD_CACHE_COMMITS", 250_000),
            reducer=env.get("CASEBOARD_REDUCER") or DEFAULT_REDUCER,
        )
        settings.validate()
        return settings

    @cached_property
    def database(self) -> DatabaseUrl:
        """``database_url`` parsed, once (``validate`` parses it first, so that a bad URL stops the start)."""
        return DatabaseUrl.parse(self.database_url)

    @cached_property
    def tenants(self) -> TenantsConfig:
        """The tenants' intake mapping and default limits, read once (``validate`` reads it first)."""
        return load_tenants(self.tenants_file)

    @cached_property
    def current_reducer(self) -> Reducer[Any]:
        """The registered reducer ``reducer`` names, loaded once (``validate`` loads it first, so that an unknown
        or broken one stops the start with one line naming the registered ones)."""
        from caseboard.reducers import get_reducer

        try:
            return get_reducer(self.reducer)
        except (UnknownReducer, ConfigurationError) as error:
            raise ConfigurationError(f"CASEBOARD_REDUCER: {error}") from None

    def validate(self) -> None:
        self.database  # noqa: B018 (a URL that names no ledger, memory:// included, is refused here)
        self.current_reducer  # noqa: B018 (an unknown or broken reducer stops the start, one line)
        self.tenants  # noqa: B018 (a bad CASEBOARD_TENANTS file stops the start, one line)
        if self.log_level not in ("debug", "info", "warning", "error"):
            raise ConfigurationError(
                f"CASEBOARD_LOG_LEVEL must be debug, info, warning or error, not {self.log_level!r}"
            )
        if self.log_format not in ("auto", "json", "console"):
            raise ConfigurationError(f"CASEBOARD_LOG_FORMAT must be auto, json or console, not {self.log_format!r}")
        _check_redis_url(self.redis_url)
        for name, secret in (
            ("CASEBOARD_MODEL_API_KEY", self.model_api_key),
            ("CASEBOARD_METRICS_TOKEN", self.metrics_token),
        ):
            if secret is not None and FIELD_VALUE_REFUSED.search(secret):  # sent or matched in a header
                raise ConfigurationError(f"{name} holds a control character, which no HTTP header may carry")


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///path`` ledger URL; None for any other URL (``DatabaseUrl.sqlite_path``)."""
    try:
        return DatabaseUrl.parse(url).sqlite_path
    except ConfigurationError:
        return None


def _check_redis_url(url: str) -> None:
    """``redis://host:port/db``, ``rediss://...`` or ``unix:///path``: what redis-py's ``from_url`` accepts."""
    expected = "expected redis://host:6379/0, rediss://... or unix:///path/to/redis.sock"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError on a port that is not a number)
    except ValueError as error:
        raise ConfigurationError(f"CASEBOARD_REDIS_URL {url!r} is not a valid URL ({error}); {expected}") from None
    if parts.scheme not in ("redis", "rediss", "unix"):
        raise ConfigurationError(f"CASEBOARD_REDIS_URL {url!r} is not a Redis URL: {expected}")
    if parts.scheme == "unix" and not parts.path:
        raise ConfigurationError(f"CASEBOARD_REDIS_URL {url!r} names no socket path: {expected}")
    database = parts.path.lstrip("/")
    if parts.scheme != "unix" and database and not database.isdigit():
        raise ConfigurationError(
            f"CASEBOARD_REDIS_URL {url!r}: the database after the host is a number (/0), not {database!r}"
        )


def _flag(env: Mapping[str, str], name: str) -> bool:
    """A setting that is on (``1``) or off (``0``, or unset): anything else is refused, never read as off."""
    raw = env.get(name) or "0"
    if raw not in ("0", "1"):
        raise ConfigurationError(f"{name} must be 1 or 0, not {raw!r}")
    return raw == "1"


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be a whole number, not {raw!r}") from None
    if value < 1:
        raise ConfigurationError(f"{name} must be at least 1, not {value}")
    return value
