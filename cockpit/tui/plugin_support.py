"""What the TUI gives plugins: loaded plugins, their CheckContext, and an
actions gate that asks the operator before anything runs.

Plugins act only through ``ctx.actions``. In the TUI that object is a
:class:`ConfirmingActions`: the same read-only refusal and audit log as
headless, plus the confirmation dialog with the exact argv before each plan
runs. A plugin that fails to load, a screen that fails to import and a bad
``[plugins.NAME]`` table become one-line notifications, never a crash.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
from collections.abc import Callable, Sequence
from typing import Any

from cockpit.core.actions import Actions, Outcome, Plan
from cockpit.errors import CockpitError, UsageError
from cockpit.plugins.api import CheckContext, Plugin


class Declined(CockpitError):
    """The operator answered "no" in the confirmation dialog."""


class ConfirmingActions(Actions):
    """Actions whose execute() first asks the operator (ConfirmAction dialog).

    Read-only mode refuses (and audits) before the dialog opens; a "no" raises
    :class:`Declined`, so a plugin reports the step as not done."""

    def __init__(self, app: Any, inner: Actions) -> None:
        super().__init__(inner.executor, read_only=inner.read_only, audit=inner.audit)
        self.app = app

    async def confirm(self, plan: Plan) -> bool:
        from cockpit.tui.screens.actions import ConfirmAction

        answer: asyncio.Future = asyncio.get_running_loop().create_future()

        def done(value: Any) -> None:
            if not answer.done():
                answer.set_result(bool(value))

        # A callback, not push_screen_wait: plugin screens run their own workers,
        # and this must work from any coroutine on the app's loop.
        self.app.push_screen(ConfirmAction(plan, self.executor.description), callback=done)
        return await answer

    async def execute(self, plan: Plan, *, dry_run: bool = False) -> Outcome:
        """Refuse in read-only mode, ask, then run. Raises ReadOnlyError, Declined, ConfigError."""
        if not dry_run:
            self.refuse_if_read_only(plan.spec.name, plan.targets)
            if not await self.confirm(plan):
                raise Declined(f"{plan.spec.title}: declined by the operator, nothing ran")
        outcome = await super().execute(plan, dry_run=dry_run)
        refresh = getattr(self.app, "action_refresh_now", None)
        if refresh is not None and not dry_run:
            refresh()
        return outcome


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


def app_actions(app: Any) -> ConfirmingActions | None:
    """The confirming gate for the app's backend, or None when it cannot act."""
    from cockpit.tui.screens.actions import actions_for_app

    try:
        inner = actions_for_app(app)
    except CockpitError as exc:  # e.g. an unusable audit log path
        app.notify(str(exc), severity="error", timeout=10)
        return None
    return None if inner is None else ConfirmingActions(app, inner)


def app_pool(app: Any):
    """One SSH pool to compute nodes for plugin probes, opened lazily, closed on exit.

    None when the backend has no Runner (demo, replay): there are no real nodes."""
    if getattr(app.backend, "runner", None) is None:
        return None
    pool = getattr(app, "plugin_pool", None)
    if pool is None:
        from cockpit.config import Config
        from cockpit.remote.pool import SshPool
        from cockpit.remote.settings import SshSettings

        pool = app.plugin_pool = SshPool(SshSettings.from_config(app.config or Config()))
        add_cleanup(app, pool.close)
    return pool


def add_cleanup(app: Any, fn: Callable[[], Any]) -> None:
    """Run ``fn`` (sync or async) when the app unmounts (see CockpitApp.on_unmount)."""
    cleanups = getattr(app, "cleanups", None)
    if cleanups is None:
        cleanups = app.cleanups = []
    cleanups.append(fn)


def plugin_context(app: Any, plugin: Plugin, progress: Callable[[str], None] | None = None) -> CheckContext:
    """The CheckContext of ``plugin`` in the TUI. Raises ConfigError for a bad [plugins.NAME]."""
    from cockpit.config import Config, plugin_config

    ctx = CheckContext(
        backend=app.backend,
        config=plugin_config(app.config or Config(), plugin),
        runner=getattr(app.backend, "runner", None),
        actions=app_actions(app),
        fanout=app_pool(app),
        read_only=bool(app.read_only),
    )
    if progress is not None:
        ctx.progress = progress
    return ctx


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
