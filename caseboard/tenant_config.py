"""What each tenant configures for the pilot loop: how an alert becomes a workspace (intake) and its default
limits, read once from the TOML file named by ``CASEBOARD_TENANTS`` (docs/pilot.md).

```toml
[tenants.tenant-a]
environment_labels = ["environment", "env"]   # the first label present names the environment
service_labels = ["service", "job"]           # ... and the service
default_environment = "production"            # when no label names it
tenant_label = "tenant"                       # an alert labelled with another tenant is refused
clock_trusted = false                         # alert start times as `verified` event times

[tenants.tenant-a.limits]
max_investigation_cycles = 6
```

A tenant the file does not name gets the defaults. The file is validated with pydantic when the settings are
(one ``ConfigurationError`` line naming the tenant, the field and what was expected); nothing in it is a secret.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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


class TenantConfig(_Strict):
    """One tenant's intake mapping and default limits."""

    environment_labels: tuple[Name, ...] = ("environment", "env")
    service_labels: tuple[Name, ...] = ("service", "job")
    default_environment: Id = "production"
    tenant_label: Name = "tenant"
    clock_trusted: bool = False
    limits: Limits = Limits()


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
