"""The registered source plugins, by name: the entry points of the group ``caseboard.sources``.

An entry point names a ``SourcePlugin`` (``prometheus = "caseboard.sources.prometheus:PLUGIN"``) whose ``name``
is the entry point's. caseboard's own are also known without installed metadata (a checkout on
``PYTHONPATH``); a plugin is imported the first time it is asked for, so a broken one breaks only the
configurations that use it, with a ``ConfigurationError`` naming it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points

from caseboard.domain.errors import ConfigurationError
from caseboard.sources.base import Source, SourcePlugin
from caseboard.sources.config import SourceConfig

GROUP = "caseboard.sources"

BUILT_IN: dict[str, str] = {
    "prometheus": "caseboard.sources.prometheus:PLUGIN",
    "tls": "caseboard.sources.tls:PLUGIN",
    "logs": "caseboard.sources.logs:PLUGIN",
    "alertmanager": "caseboard.sources.alertmanager:PLUGIN",
    "mcp": "caseboard.sources.mcp_tools:PLUGIN",
}
"""caseboard's own sources, as its pyproject.toml registers them."""


class SourceRegistry(Mapping[str, str]):
    """Name -> the object an entry point names (``module:attribute``); ``plugin(name)`` imports it."""

    def __init__(self, group: str = GROUP, built_in: Mapping[str, str] = BUILT_IN) -> None:
        self.group = group
        self.built_in = dict(built_in)
        self._targets: dict[str, str] | None = None
        self._loaded: dict[str, SourcePlugin] = {}

    def refresh(self) -> None:
        """Reads the entry points again (after an install)."""
        self._targets = None
        self._loaded = {}

    def _all(self) -> dict[str, str]:
        if self._targets is None:
            targets = dict(self.built_in)
            for point in entry_points(group=self.group):
                targets.setdefault(point.name, point.value)  # a built-in name is never served by another
            self._targets = targets
        return self._targets

    def __getitem__(self, name: str) -> str:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._all()))

    def __len__(self) -> int:
        return len(self._all())

    def plugin(self, name: str) -> SourcePlugin:
        loaded = self._loaded.get(name)
        if loaded is not None:
            return loaded
        target = self._all().get(name)
        if target is None:
            raise ConfigurationError(f"no source plugin {name!r} (there are {', '.join(self)})")
        module, _, attribute = target.partition(":")
        try:
            plugin = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as error:
            raise ConfigurationError(f"source plugin {name!r} ({target}) cannot be loaded: {error}") from None
        if not isinstance(plugin, SourcePlugin) or plugin.name != name:
            raise ConfigurationError(
                f"source plugin {name!r} ({target}) is not a caseboard.sources.SourcePlugin named {name!r}"
            )
        self._loaded[name] = plugin
        return plugin

    def build(self, name: str, config: SourceConfig) -> Source:
        """The source ``name`` of a tenant's configuration."""
        plugin = self.plugin(config.type)
        return plugin.build(name, config, plugin.options_of(config))


SOURCES = SourceRegistry()
