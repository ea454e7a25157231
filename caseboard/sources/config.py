"""The sources configuration: one file (``CASEBOARD_SOURCES``, TOML or YAML), validated at start.

Per tenant, the sources it may query, each with its plugin (``type``), endpoint, the request kinds it serves,
a credential named by reference (an environment variable or a file, read when a query is made and never
written anywhere), whether its clock is trusted (observations' event times are then ``verified``) and its
guardrails. Every mistake is named with its path, all of them in one line (``ConfigurationError``, exit 2).

    [tenants.tenant-a.sources.prometheus]
    type = "prometheus"
    endpoint = "http://prometheus:9090"
    clock_trusted = true
    credential = { env = "PROMETHEUS_TOKEN" }
    guardrails = { max_range_s = 86400, max_series = 500, max_bytes = 10485760, timeout_s = 30 }
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from caseboard.domain.errors import ConfigurationError
from caseboard.domain.text import FIELD_VALUE_REFUSED

Name = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]


class Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


HeaderName = Annotated[str, StringConstraints(pattern=r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")]
"""An HTTP field name (RFC 9110's token)."""


class Credential(Strict):
    """A secret by reference: an environment variable's name, or a file's path; never the secret itself."""

    env: str | None = None
    file: Path | None = None
    header: HeaderName = "Authorization"
    """The HTTP header it is sent in; ``Authorization`` gets ``Bearer <secret>``."""

    @model_validator(mode="after")
    def _one_reference(self) -> Credential:
        if (self.env is None) == (self.file is None):
            raise ValueError("name exactly one of env (a variable's name) or file (a path)")
        if self.env is not None and not os.environ.get(self.env):
            raise ValueError(f"the environment variable {self.env} is not set")
        if self.file is not None and not self.file.is_file():
            raise ValueError(f"the file {self.file} does not exist")
        self.secret()  # readable, and sendable
        return self

    def secret(self) -> str:
        """The secret, read now; ``ValueError`` naming the reference, never the value, when it cannot be read or
        sent."""
        secret = self.value()
        if FIELD_VALUE_REFUSED.search(secret):
            raise ValueError(f"{self._where()} holds a control character, which no HTTP header may carry")
        return secret

    def value(self) -> str:
        """The value as read now, sendable or not: what must be kept out of what is recorded."""
        if self.env is not None:
            return os.environ.get(self.env, "")
        assert self.file is not None
        try:
            return self.file.read_text().strip()
        except (OSError, UnicodeDecodeError) as error:
            why = getattr(error, "strerror", None) or "not text"
            raise ValueError(f"{self._where()} cannot be read ({why})") from None

    def _where(self) -> str:
        return f"the environment variable {self.env}" if self.env is not None else f"the file {self.file}"

    def headers(self) -> dict[str, str]:
        secret = self.secret()
        return {self.header: f"Bearer {secret}" if self.header.lower() == "authorization" else secret}


class Guardrails(Strict):
    """What one query may cover and bring back; beyond them the result is cut and marked incomplete."""

    max_range_s: Annotated[int, Field(gt=0)] = 24 * 3600
    """The longest time range a query may cover; a longer one is refused before it is sent."""
    max_series: Annotated[int, Field(gt=0)] = 500
    """The most series (metrics), alerts, certificates or targets read from one response."""
    max_lines: Annotated[int, Field(gt=0)] = 5000
    """The most log lines one query asks for and reads."""
    max_bytes: Annotated[int, Field(gt=0)] = 10 * 1024 * 1024
    """The most bytes read of one response; the rest is not read (truncated)."""
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 30.0
    """The deadline of one query."""


class SourceConfig(Strict):
    """One source of one tenant."""

    type: Name
    """The plugin: an entry point of ``caseboard.sources`` (``prometheus``, ``tls``, ...)."""
    endpoint: str | None = None
    """Where it answers (a URL; for TLS, unused: targets are ``host:port``)."""
    kinds: tuple[Name, ...] = ()
    """The work-request kinds it serves; empty: the plugin's own."""
    system: Name | None = None
    """The observations' ``source.system``; default: the source's name."""
    clock_trusted: bool = False
    """Whether the source's clock is trusted: its observations' event times are then ``verified``."""
    credential: Credential | None = None
    guardrails: Guardrails = Guardrails()
    options: dict[str, Any] = Field(default_factory=dict)
    """The plugin's own settings (directories of a log source, a TLS source's allowed targets, ...)."""


class TenantSources(Strict):
    sources: dict[Name, SourceConfig]


class SourcesFile(Strict):
    tenants: dict[Name, TenantSources]

    def tenant(self, tenant: str | None) -> tuple[str, TenantSources]:
        """The tenant named, or the only one when none is named."""
        if tenant is None:
            if len(self.tenants) != 1:
                raise ConfigurationError(
                    f"the sources file names {len(self.tenants)} tenants ({', '.join(sorted(self.tenants))}): "
                    "choose one with --tenant"
                )
            tenant = next(iter(self.tenants))
        found = self.tenants.get(tenant)
        if found is None:
            raise ConfigurationError(
                f"the sources file has no tenant {tenant!r} (it has {', '.join(sorted(self.tenants)) or 'none'})"
            )
        return tenant, found


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(top level)"


def mistakes(error: ValidationError, prefix: tuple[int | str, ...] = ()) -> list[str]:
    return [f"{_where((*prefix, *e['loc']))}: {e['msg']}" for e in error.errors()]


def load_sources(path: str | Path) -> SourcesFile:
    """The file at ``path``, validated, its plugins' options too; ``ConfigurationError`` naming every mistake."""
    from caseboard.sources.registry import SOURCES  # the registry imports this module

    where = Path(path)
    try:
        text = where.read_text()
    except OSError as error:
        raise ConfigurationError(f"CASEBOARD_SOURCES {where}: cannot be read ({error.strerror})") from None
    try:
        raw = yaml.safe_load(text) if where.suffix in (".yaml", ".yml") else tomllib.loads(text)
    except (yaml.YAMLError, tomllib.TOMLDecodeError) as error:
        raise ConfigurationError(
            f"CASEBOARD_SOURCES {where}: not valid {where.suffix[1:] or 'TOML'}: {error}"
        ) from None
    try:
        parsed = SourcesFile.model_validate(raw)
    except ValidationError as error:
        raise ConfigurationError(f"CASEBOARD_SOURCES {where}: " + "; ".join(mistakes(error))) from None
    found: list[str] = []
    for tenant, sources in parsed.tenants.items():
        for name, source in sources.sources.items():
            at = ("tenants", tenant, "sources", name)
            if source.type not in SOURCES:
                found.append(
                    f"{_where((*at, 'type'))}: no source plugin {source.type!r} (there are {', '.join(SOURCES)})"
                )
                continue
            try:
                SOURCES.plugin(source.type).options_of(source)
            except ValidationError as error:
                found.extend(mistakes(error, (*at, "options")))
    if found:
        raise ConfigurationError(f"CASEBOARD_SOURCES {where}: " + "; ".join(found))
    return parsed
