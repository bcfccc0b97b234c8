"""What the TUI gives plugins: the loaded plugins and their declared contributions
(:class:`PluginRegistry`), their CheckContext, and the confirmation dialog of the gate.

Plugins act only through the gate in their context. In the TUI its
confirmation policy is the dialog with the exact argv (:func:`dialog_confirm`),
with the same read-only refusal and audit log as headless. A plugin that fails
to load, a bad contribution (a key that clashes, names no opener, a screen path
that is not ``module:Class``) and a bad ``[plugins.NAME]`` table become
notifications naming the plugin, never a crash and never a silent skip.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.binding import Binding

from cockpit.core.actions import Plan
from cockpit.errors import UsageError
from cockpit.plugins.api import CheckContext, KeySpec, OpenerSpec, Plugin
from cockpit.plugins.specs import spec_problem
from cockpit.tui.services import services_for

if TYPE_CHECKING:
    from cockpit.plugins.loader import LoadedPlugins
    from cockpit.tui.app import CockpitApp


def dialog_confirm(app: CockpitApp, services: Any = None) -> Callable[[Plan], Any]:
    """The TUI's confirmation policy for the gate of ``services`` (a cluster's link; the
    screen in front's when None): the one confirmation dialog (cockpit.tui.acting.confirm_dialog:
    the exact argv, any script on stdin, what each target is); the plan runs only on "yes"."""

    async def confirm(plan: Plan) -> bool:
        from cockpit.tui.acting import confirm_dialog

        answer: asyncio.Future = asyncio.get_running_loop().create_future()

        def done(value: Any) -> None:
            if not answer.done():
                answer.set_result(bool(value))

        # A callback, not push_screen_wait: plugin screens run their own workers,
        # and this must work from any coroutine on the app's loop.
        app.push_screen(confirm_dialog(app, plan, services=services), callback=done)
        confirmed = await answer
        if confirmed:
            app.call_later(app.action_refresh_now)
        return confirmed

    return confirm


@dataclass(frozen=True)
class PluginKey:
    """A plugin's declared key, accepted: its spec and the plugin it belongs to."""

    plugin: Plugin
    spec: KeySpec

    def binding(self) -> Binding:
        """One Binding per key spec, all dispatched by the App's ``plugin_key`` action;
        the spec's id lets a keymap rebind it like cockpit's own keys. The footer shows
        the keys whose spec asks for it (80 columns hold one); ``?`` lists all."""
        return Binding(self.spec.key, f"plugin_key({self.spec.id!r})", self.spec.description, id=self.spec.id,
                       show=bool(self.spec.footer))


def normalize_key(key: str) -> str:
    """The key as Textual names it ("?" -> "question_mark")."""
    return next(iter(Binding.make_bindings([Binding(key, "noop")]))).key


class PluginRegistry:
    """The plugins loaded through the ``cockpit.plugins`` entry point, and what they
    contribute, checked once when the App is built. ``warnings`` name the plugin."""

    def __init__(self, loaded: LoadedPlugins) -> None:
        self.plugins: dict[str, Plugin] = dict(loaded.plugins)
        self.warnings: list[str] = list(loaded.warnings)
        self.keys: dict[str, PluginKey] = {}  # by KeySpec id
        self._openers: dict[str, dict[str, OpenerSpec]] = {}  # plugin -> the openers it declares well, by name
        self._left_out: set[tuple[str, str, str]] = set()  # ("screen"|"command", plugin, name)
        for plugin in self.plugins.values():
            self._check_contributions(plugin)

    @classmethod
    def load(cls) -> PluginRegistry:
        """Load every plugin through the entry point (a broken one is a warning)."""
        from cockpit.plugins import loader

        return cls(loader.load_plugins())

    def get(self, name: str) -> Plugin | None:
        return self.plugins.get(name)

    def _check_contributions(self, plugin: Plugin) -> None:
        self._openers[plugin.name] = self._accept_openers(plugin)
        for name, path in dict(plugin.screens).items():
            module, _, attr = str(path).partition(":")
            if not (isinstance(path, str) and module and attr):
                self._left_out.add(("screen", plugin.name, name))
                self.warnings.append(f"plugin {plugin.name!r}: screen {name!r} is {path!r}, not 'module:Class': left out")
        for title, target in dict(plugin.commands).items():
            if not self._opens(plugin, target):
                self._left_out.add(("command", plugin.name, title))
                self.warnings.append(f"plugin {plugin.name!r}: command {title!r} names {target!r}, "
                                     "neither a screen nor a check of the plugin: left out")

    def _accept_openers(self, plugin: Plugin) -> dict[str, OpenerSpec]:
        """The plugin's OpenerSpecs that are declared well; each bad one is a warning naming it."""
        out: dict[str, OpenerSpec] = {}
        for spec in tuple(plugin.openers or ()):
            why = spec_problem(spec) or (f"opener {spec.name!r} is declared twice" if spec.name in out else "")
            if not why and spec.screen and spec.screen not in dict(plugin.screens):
                why = f"opener {spec.name!r} names no screen of the plugin ({spec.screen!r})"
            if not why and spec.check and not any(c.name == spec.check for c in plugin.checks):
                why = f"opener {spec.name!r} names no check of the plugin ({spec.check!r})"
            if why:
                self.warnings.append(f"plugin {plugin.name!r}: {why}: left out")
            else:
                out[spec.name] = spec
        return out

    def _opens(self, plugin: Plugin, target: str) -> bool:
        """Whether ``target`` is one of the plugin's openers, screens or checks."""
        return (target in self._openers.get(plugin.name, {}) or target in self.screens(plugin)
                or any(c.name == target for c in plugin.checks))

    def openers(self, plugin: Plugin) -> dict[str, OpenerSpec]:
        """The plugin's accepted openers, by name."""
        return dict(self._openers.get(plugin.name, {}))

    def opener(self, plugin: Plugin, name: str) -> OpenerSpec | None:
        return self._openers.get(plugin.name, {}).get(name)

    def screens(self, plugin: Plugin) -> dict[str, str]:
        """The plugin's screens that are declared well (name -> "module:Class")."""
        return {n: p for n, p in dict(plugin.screens).items() if ("screen", plugin.name, n) not in self._left_out}

    def commands(self, plugin: Plugin) -> dict[str, str]:
        """The plugin's palette commands that name one of its screens or checks."""
        return {t: v for t, v in dict(plugin.commands).items() if ("command", plugin.name, t) not in self._left_out}

    def register_keys(self, taken: Mapping[str, str]) -> list[Binding]:
        """Accept each plugin's KeySpecs, in plugin order, and return their Bindings.

        ``taken``: normalized key -> what cockpit binds it to. A spec that is not a
        KeySpec, lacks a key or id, reuses one, takes a key cockpit uses or names none of
        its plugin's openers, screens or checks is a warning naming its plugin; the
        plugin's other contributions still work."""
        used = dict(taken)
        out = []
        for plugin in self.plugins.values():
            for spec in tuple(plugin.keys or ()):
                why = self._bad_key(plugin, spec, used)
                if why:
                    self.warnings.append(f"plugin {plugin.name!r}: key {why}: left out")
                    continue
                used[normalize_key(spec.key)] = f"{spec.description} (plugin {plugin.name})"
                entry = PluginKey(plugin, spec)
                self.keys[spec.id] = entry
                out.append(entry.binding())
        return out

    def _bad_key(self, plugin: Plugin, spec: Any, used: Mapping[str, str]) -> str:
        if not isinstance(spec, KeySpec):
            return f"{spec!r} is not a KeySpec"
        if not isinstance(spec.key, str) or not spec.key.strip() or "," in spec.key:
            return f"{spec.id!r} has no single key ({spec.key!r})"
        if not isinstance(spec.id, str) or not spec.id.strip() or spec.id in self.keys:
            return f"{spec.key!r} needs an id of its own (got {spec.id!r})"
        taken = used.get(normalize_key(spec.key))
        if taken:
            return f"{spec.key!r} ({spec.id}) is taken by {taken}"
        if not self._opens(plugin, spec.opener):
            return f"{spec.key!r} ({spec.id}) opens {spec.opener!r}, which is no opener, screen or check"
        return ""


def plugin_context(app: CockpitApp, plugin: Plugin, progress: Callable[[str], None] | None = None) -> CheckContext:
    """The CheckContext of ``plugin`` in the TUI: the backend, gate and probe runner of the
    cluster of the screen in front (a detail's own, else the main views'), never a mix.
    Raises ConfigError for a bad [plugins.NAME] or an unusable audit log."""
    from cockpit.config import plugin_config
    from cockpit.plugins.host import check_context
    from cockpit.remote.probes import NoProbes

    link = services_for(app)
    probes = link.probes if link.probes is not None else NoProbes(f"{link.backend_name} has no nodes to ask")
    return check_context(backend=link.backend, actions=link.gate(), probes=probes,
                         config=plugin_config(link.config, plugin), progress=progress)


def import_object(path: str, plugin: str = "") -> Any:
    """``"pkg.module:Name"`` -> the object. Raises UsageError naming the plugin, the path and the cause."""
    module, _, name = path.partition(":")
    try:
        obj = importlib.import_module(module)
        for part in name.split(".") if name else ():
            obj = getattr(obj, part)
    except Exception as exc:  # a plugin's broken screen must not take the TUI down
        who = f"plugin {plugin!r}: " if plugin else ""
        raise UsageError(f"{who}cannot import plugin screen {path}: {type(exc).__name__}: {exc}") from None
    return obj


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message}")


def check_args(check: Any, argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv`` with the check's own flags (as headless). Raises UsageError."""
    parser = _Parser(prog=f"check {check.name}", add_help=False)
    parser.add_argument("--json", action="store_true")
    check.add_arguments(parser)
    return parser.parse_args(list(argv))
