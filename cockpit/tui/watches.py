"""Each cluster's watches (issue 22): GPU telemetry, the output watch, the controller's
health and the flapping marks, node kinds of that cluster's own poller.

:func:`attach_watches` makes them for one :class:`~cockpit.tui.fleet.ClusterLink` from
its own config (its ``[clusters.NAME] prometheus_url``, host and intervals), probe
runner and backend; what they read is posted naming the cluster, and the App keeps it
on that cluster's link (cockpit/tui/clusters.py), showing the readings of the cluster in
front. For the cluster in front the Pulse picks the jobs whose output to watch and the
suspects' nodes whose GPUs to read; for the others :func:`watch_behind` does, in a
thread, from that cluster's own snapshot and readings, so that every cluster's suspects
carry their output-silent and idle-GPU evidence (the fleet Pulse lists them all).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from cockpit.core.flapwatch import KIND as FLAPPING, FlappingWatch
from cockpit.core.poller import NodeKind
from cockpit.errors import ConfigError
from cockpit.text import one_line
from cockpit.tui.controllerwatch import KIND as CONTROLLER, ControllerWatch
from cockpit.tui.fleet import ClusterLink
from cockpit.tui.outputwatch import KIND as OUTPUT, MAX_WATCHED, OutputWatch, output_blocker
from cockpit.tui.pulsedata import behind_watch
from cockpit.tui.telemetry import LiveTelemetry, telemetry_blocker


def attach_watches(app: Any, link: ClusterLink, clock: Callable[[], float], *, strict: bool = True) -> dict[str, NodeKind]:
    """Give ``link`` its watches; returns their node kinds for its poller. ``strict``: an
    unusable Prometheus setting raises ConfigError (the first cluster's, as a session with
    one cluster does); otherwise it turns that cluster's telemetry off, saying why."""
    cfg = link.config
    kinds: dict[str, NodeKind] = {}
    why = telemetry_blocker(cfg, link.probes, link.simulated)
    if not why:
        try:
            link.live_telemetry = LiveTelemetry(app, link, clock)
        except ConfigError as exc:
            if strict:
                raise
            why = f"off ({one_line(str(exc))})"
    link.telemetry_off = why
    if link.live_telemetry is not None:
        kinds.update(link.live_telemetry.node_kinds())
    local, remote, link.watching = output_blocker(cfg, link.probes, link.simulated)
    if not link.watching:
        link.output_watch = OutputWatch(app, link, cfg.tui.watch_output, local=local, remote=remote)
        kinds[OUTPUT] = link.output_watch.node_kind()
    link.controller_watch = ControllerWatch(app, link.backend, cluster=link.name)  # asks nothing of the demo
    kinds[CONTROLLER] = link.controller_watch.node_kind()
    link.flapping_watch = FlappingWatch(link.backend, clock, lambda names: app.fleet.flapping_in(link, names),
                                        cfg.refresh.flapping)  # the Nodes view's flapping mark
    if link.flapping_watch.available:
        kinds[FLAPPING] = link.flapping_watch.node_kind()
    return kinds


def watch_behind(app: Any, link: ClusterLink) -> None:
    """For a cluster not in front: pick its jobs to watch and its suspects' nodes from its
    latest snapshot and readings, in a thread (one worker per cluster, the newest wins)."""
    if link is app.fleet.current or link.snapshot is None:
        return
    if link.output_watch is None and link.live_telemetry is None:
        return
    snap, outputs, telemetry, usual = link.snapshot, link.outputs, link.telemetry, link.tracker.usual
    silent_after = link.config.tui.silent_after

    async def pick() -> None:
        candidates, nodes = await asyncio.to_thread(
            behind_watch, snap, outputs=outputs, telemetry=telemetry, usual=usual, now=app.clock(),
            silent_after=silent_after, watch=MAX_WATCHED)
        if link is app.fleet.current:  # switched to meanwhile: the Pulse picks for it now
            return
        link.watch_nodes = nodes
        if link.output_watch is not None:
            link.output_watch.watch(candidates)
        if link.live_telemetry is not None:
            link.live_telemetry.tick()  # the nodes new to it are read now, not at the next look

    app.run_worker(pick, name="watch-behind", group=f"watch-behind:{link.name}", exclusive=True)
