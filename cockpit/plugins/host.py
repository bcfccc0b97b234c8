"""Builds a plugin's CheckContext: the same for headless runs and the TUI.

The backend brings its probe runner (``probe_runner``) and the session brings
its gate (:class:`cockpit.core.actions.Actions`, whose confirmation policy is
``--yes`` headless and the dialog in the TUI).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cockpit.core.actions import Actions
from cockpit.core.plugin_host import BackendCluster, GatedJobs, PluginGate
from cockpit.plugins.api import CheckContext


def check_context(*, backend: Any, actions: Actions, probes: Any, config: Mapping[str, Any],
                  progress: Callable[[str], None] | None = None, gpu_series: Any = None) -> CheckContext:
    """The CheckContext for one plugin (``config``: its [plugins.NAME] table, defaults applied)."""
    cluster = BackendCluster(backend)
    ctx = CheckContext(
        cluster=cluster,
        probes=probes,
        jobs=GatedJobs(actions, cluster, probes),
        actions=PluginGate(actions),
        config=config,
        read_only=actions.read_only,
        simulated=backend.capabilities().simulated,
        gpu_series=gpu_series,
    )
    if progress is not None:
        ctx.progress = progress
    return ctx


def session_context(session: Any, plugin: Any, *, yes: bool = False, progress: Callable[[str], None] | None = None,
                    config: Mapping[str, Any] | None = None) -> CheckContext:
    """A headless CheckContext: ``--yes`` confirms the gate; the backend's probe runner.

    The caller closes ``ctx.probes`` when done. Raises ConfigError for a bad
    [plugins.NAME] table or an unusable audit log path."""
    from cockpit.config import plugin_config
    from cockpit.core.actions import actions_from_session
    from cockpit.telemetry.promsource import gpu_series_for

    simulated = session.backend.capabilities().simulated
    return check_context(backend=session.backend, actions=actions_from_session(session, yes=yes),
                         probes=session.backend.probe_runner(session.config),
                         config=plugin_config(session.config, plugin) if config is None else config,
                         progress=progress, gpu_series=None if simulated else gpu_series_for(session.config))
