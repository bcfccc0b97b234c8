"""Find plugins through the ``cockpit.plugins`` entry-point group.

Listing does not import anything; loading does, and a plugin that fails to
import or exposes the wrong object becomes a warning, never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points

from cockpit.plugins.api import Plugin

GROUP = "cockpit.plugins"


@dataclass
class LoadedPlugins:
    plugins: dict[str, Plugin] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def check(self, name: str):
        for plugin in self.plugins.values():
            for chk in plugin.checks:
                if chk.name == name:
                    return plugin, chk
        return None, None

    def all_checks(self):
        return [(p, c) for p in self.plugins.values() for c in p.checks]


def list_entry_points(group: str = GROUP) -> list[EntryPoint]:
    return sorted(entry_points(group=group), key=lambda ep: ep.name)


def load_plugins(group: str = GROUP, eps: list[EntryPoint] | None = None) -> LoadedPlugins:
    out = LoadedPlugins()
    for ep in eps if eps is not None else list_entry_points(group):
        try:
            obj = ep.load()
            plugin = obj() if callable(obj) and not isinstance(obj, Plugin) else obj
            if not isinstance(plugin, Plugin):
                raise TypeError(f"{ep.value} is {type(plugin).__name__}, not a cockpit Plugin")
        except Exception as exc:  # a broken plugin must never take cockpit down
            out.warnings.append(f"plugin {ep.name!r} not loaded: {type(exc).__name__}: {exc}")
            continue
        out.plugins[plugin.name] = plugin
    return out
