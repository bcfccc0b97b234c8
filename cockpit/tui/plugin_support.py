"""What the TUI gives plugins: loaded plugins, their CheckContext, and an
actions gate that asks the operator before anything runs.

Plugins act only through the gate in their context. In the TUI its
confirmation policy is the dialog with the exact argv (:func:`dialog_confirm`),
with the same read-only refusal and audit log as headless. A plugin that fails to load, a screen that fails to import and a bad
``[plugins.NAME]`` table become one-line notifications, never a crash.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
from collections.abc import Callable, Sequence
from typing import Any

from cockpit.core.actions import Actions, Declined, Plan
from cockpit.errors import CockpitError, UsageError
from cockpit.plugins.api import CheckContext, Plugin


def dialog_confirm(app: Any):
    """The TUI's confirmation policy for the gate: the ConfirmAction dialog with the
    exact argv (and any script on stdin); the plan runs only on "yes"."""

    async def confirm(plan: Plan) -> bool:
        from cockpit.tui.screens.actions import ConfirmAction

        answer: asyncio.Future = asyncio.get_running_loop().create_future()

        def done(value: Any) -> None:
            if not answer.done():
                answer.set_result(bool(value))

        # A callback, not push_screen_wait: plugin screens run their own workers,
        # and this must work from any coroutine on the app's loop.
        gate = getattr(app, "_gate_description", "")
        app.push_screen(ConfirmAction(plan, gate), callback=done)
        confirmed = await answer
        if confirmed:
            app.call_later(app.action_refresh_now)
        return confirmed

    return confirm


def load_plugins_for_app(app: Any):
    """Load every plugin once per app; each loader warning becomes a notification."""
    loaded = getattr(app, "plugins_loaded", None)
    if loaded is not None:
        return loaded
    from cockpit.plugins import loader

    loaded = loader.load_plugins()
    app.plugins_loaded = loaded
    for warning in loaded.warnings:
        app.notify(warning, title="plugin not loaded", severity="error", timeout=15)
    return loaded


def app_actions(app: Any) -> Actions | None:
    """The gate for the app's backend, confirming with the dialog; None (and a
    notification) when the audit log path is unusable."""
    from cockpit.config import Config
    from cockpit.core.actions import actions_for_backend

    try:
        actions = actions_for_backend(app.backend, app.config or Config(), read_only=bool(app.read_only),
                                      confirm=dialog_confirm(app))
    except CockpitError as exc:  # e.g. an unusable audit log path
        app.notify(str(exc), severity="error", timeout=10)
        return None
    app._gate_description = actions.description
    return actions


def app_probes(app: Any):
    """The backend's probe runner for plugin probes, made once, closed on exit."""
    probes = getattr(app, "plugin_probes", None)
    if probes is None:
        from cockpit.config import Config

        probes = app.plugin_probes = app.backend.probe_runner(app.config or Config())
        add_cleanup(app, probes.close)
    return probes


def add_cleanup(app: Any, fn: Callable[[], Any]) -> None:
    """Run ``fn`` (sync or async) when the app unmounts (see CockpitApp.on_unmount)."""
    cleanups = getattr(app, "cleanups", None)
    if cleanups is None:
        cleanups = app.cleanups = []
    cleanups.append(fn)


def plugin_context(app: Any, plugin: Plugin, progress: Callable[[str], None] | None = None) -> CheckContext:
    """The CheckContext of ``plugin`` in the TUI. Raises ConfigError for a bad [plugins.NAME]
    or an unusable audit log."""
    from cockpit.config import Config, plugin_config
    from cockpit.core.actions import actions_for_backend
    from cockpit.plugins.host import check_context

    actions = actions_for_backend(app.backend, app.config or Config(), read_only=bool(app.read_only),
                                  confirm=dialog_confirm(app))
    app._gate_description = actions.description
    return check_context(backend=app.backend, actions=actions, probes=app_probes(app),
                         config=plugin_config(app.config or Config(), plugin), progress=progress)


def import_object(path: str) -> Any:
    """``"pkg.module:Name"`` -> the object. Raises UsageError naming the path and the cause."""
    module, _, name = path.partition(":")
    try:
        obj = importlib.import_module(module)
        for part in name.split(".") if name else ():
            obj = getattr(obj, part)
    except Exception as exc:  # a plugin's broken screen must not take the TUI down
        raise UsageError(f"cannot import plugin screen {path}: {type(exc).__name__}: {exc}") from None
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
