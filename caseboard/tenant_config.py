"""What each tenant configures for the pilot loop: how an alert becomes a workspace (intake), its default
limits and where its handoffs go, read once from the TOML file named by ``CASEBOARD_TENANTS`` (docs/pilot.md).

```toml
[tenants.tenant-a]
environment_labels = ["environment", "env"]   # the first label present names the environment
service_labels = ["service", "job"]           # ... and the service
default_environment = "production"            # when no label names it
tenant_label = "tenant"                       # an alert labelled with another tenant is refused
clock_trusted = false                         # alert start times as `verified` event times
public_url = "http://127.0.0.1:8000"          # handoffs link to the console here

[tenants.tenant-a.limits]
max_investigation_cycles = 6

[[tenants.tenant-a.webhooks]]                 # where handoffs go, signed with the named secret
url = "https://oncall.example/hooks/caseboard"
secret_env = "TENANT_A_WEBHOOK_SECRET"
```

A tenant the file does not name gets the defaults. The file is validated with pydantic when the settings are
(one ``ConfigurationError`` line naming the tenant, the field and what was expected); no secret is written in
it, only the name of the variable or file that holds one.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from caseboard.domain.errors import ConfigurationError
from caseboard.domain.items import Id, Name, RuntimeLimits

DEFAULT_LIMITS = RuntimeLimits(
    max_selected_items=20,
    max_investigation_cycles=6,
    max_open_questions=10,
    max_proposals=10,
    max_pending_work=10,
)


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Limits(_Strict):
    """A tenant's default runtime limits for a workspace opened by intake: absent fields keep caseboard's."""

    max_selected_items: int | None = Field(default=None, ge=1, le=1_000_000)
    max_investigation_cycles: int | None = Field(default=None, ge=1, le=1_000_000)
    max_open_questions: int | None = Field(default=None, ge=1, le=1_000_000)
    max_proposals: int | None = Field(default=None, ge=1, le=1_000_000)
    max_pending_work: int | None = Field(default=None, ge=1, le=1_000_000)

    def runtime_limits(self) -> RuntimeLimits:
        return DEFAULT_LIMITS.model_copy(update=self.model_dump(exclude_none=True))


class Webhook(_Strict):
    """Where a tenant's handoffs are delivered. The secret that signs them is named, never written here: an
    environment variable (``secret_env``) or a file (``secret_file``), read when a handoff is delivered."""

    url: Annotated[str, StringConstraints(pattern=r"^https?://[^\s]+$", max_length=2048)]
    secret_env: Name | None = None
    secret_file: str | None = None
    format: Literal["caseboard", "slack"] = "caseboard"
    """``caseboard``: the signed ``caseboard.handoff.v1`` document; ``slack``: a Slack-compatible text message."""
    timeout_s: float = Field(default=5.0, gt=0, le=60)

    @model_validator(mode="after")
    def _one_secret(self) -> Webhook:
        if self.format == "caseboard" and (self.secret_env is None) == (self.secret_file is None):
            raise ValueError("name the signing secret by exactly one of secret_env or secret_file")
        return self

    def secret(self) -> bytes | None:
        """The signing secret, or None when the variable is unset or the file cannot be read."""
        if self.secret_env is not None:
            value = os.environ.get(self.secret_env)
            return value.encode() if value else None
        if self.secret_file is not None:
            try:
                return Path(self.secret_file).read_bytes().strip() or None
            except OSError:
                return None
        return None

    def where(self) -> str:
        """The URL without credentials, query or fragment: what logs and delivery records name."""
        url = httpx.URL(self.url)
        port = f":{url.port}" if url.port else ""
        return f"{url.scheme}://{url.host}{port}{url.path}"


class TenantConfig(_Strict):
    """One tenant's intake mapping, default limits and handoff webhooks."""

    environment_labels: tuple[Name, ...] = ("environment", "env")
    service_labels: tuple[Name, ...] = ("service", "job")
    default_environment: Id = "production"
    tenant_label: Name = "tenant"
    clock_trusted: bool = False
    limits: Limits = Limits()
    webhooks: tuple[Webhook, ...] = ()
    public_url: Annotated[str, StringConstraints(pattern=r"^https?://[^\s]+$")] | None = None
    """Where people reach this server (``https://caseboard.example``): handoffs link to its pages."""


class TenantsConfig(_Strict):
    """Every configured tenant; ``of(tenant)`` is the one a route reads (the defaults when not named)."""

    tenants: dict[Id, TenantConfig] = {}

    def of(self, tenant_id: str) -> TenantConfig:
        return self.tenants.get(tenant_id) or TenantConfig()


def load_tenants(path: str | None) -> TenantsConfig:
    """The configuration in ``path`` (``CASEBOARD_TENANTS``), or the defaults when it is unset."""
    if not path:
        return TenantsConfig()
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigurationError(f"CASEBOARD_TENANTS {path!r} cannot be read: {error.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"CASEBOARD_TENANTS {path!r} is not valid TOML: {error}") from None
    try:
        return TenantsConfig.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}" for problem in error.errors()
        )
        raise ConfigurationError(f"CASEBOARD_TENANTS {path!r}: {problems}") from None
