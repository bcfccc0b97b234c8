"""The clusters of one TUI session: one :class:`ClusterLink` per ``[clusters.NAME]``.

Each link owns its backend, its config (audit lines name the cluster, its own
poller intervals from ``[clusters.NAME] refresh_*``), its poller, its latest
snapshot and status, its probe runner and its gate; and its watches, node kinds
of its own poller made from its own config (cockpit/tui/watches.py): GPU
telemetry, the output watch, the controller's health and the flapping marks,
whose latest readings it keeps. The App shows one link in its main views (the
cluster in front) and keeps every poller running, so a cluster that stops
answering is stale on its own while the others stay fresh, and a switch shows
the readings of the cluster switched to at once. A link is what screens are
handed (cockpit/tui/services.py).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, KeysView
from typing import Any

from cockpit.config import Config
from cockpit.core.poller import Poller, PollStatus
from cockpit.models import ClusterSnapshot
from cockpit.tui.jobfacts import ClusterFacts
from cockpit.tui.pulsedata import ChangeTracker

INTERVAL_KINDS = ("nodes", "jobs", "partitions", "topology")


def intervals_of(config: Config) -> dict[str, float]:
    refresh = config.refresh
    return {k: getattr(refresh, k) for k in INTERVAL_KINDS}


def probes_for(backend: Any, config: Config) -> Any:
    """The backend's probe runner (read-only commands on its nodes), or None when it brings none."""
    offer = backend.capabilities().probes
    return offer.probe_runner(config) if offer is not None else None


class ClusterLink:
    """One cluster's services and its poller (implements ClusterServices)."""

    def __init__(self, backend: Any, config: Config, *, read_only: bool, probes: Any = None,
                 confirm: Callable[[ClusterLink], Any] | None = None, clock: Callable[[], float] = time.time) -> None:
        """``confirm``: makes the gate's confirmation policy for this link (the App's dialog,
        its targets described from this cluster's snapshot) when first acting;
        ``clock``: the App's (its facts' "3m ago")."""
        self.name = config.cluster
        self.backend = backend
        self.config = config
        self.read_only = read_only
        self.probes = probes
        self.snapshot: ClusterSnapshot | None = None
        self.status: PollStatus | None = None
        self.poller: Poller | None = None
        self.tracker = ChangeTracker()  # the Pulse's recent changes of this cluster, kept across switches
        # its watches (cockpit/tui/watches.py: attach_watches), None where off
        self.live_telemetry: Any = None
        self.telemetry_off = ""  # why its GPU telemetry is off ('' when on)
        self.output_watch: Any = None
        self.watching = ""  # why its output watch is off ('' when on)
        self.controller_watch: Any = None
        self.flapping_watch: Any = None
        # their latest readings, each replaced whole (never changed in place: workers read them)
        self.telemetry: dict = {}  # live GPU readings of its nodes by (node, GPU index)
        self.outputs: dict[int, float] = {}  # job id -> when its output last changed
        self.controller_line: str | None = None  # slurmctld's health line, None while healthy
        self.flapping: frozenset[str] = frozenset()  # its nodes drained or down 3+ times lately
        self.watch_nodes: tuple[str, ...] = ()  # its suspects' nodes while it is not in front
        self.refresh_once = False  # r while paused: un-pause for one poll
        self.facts = ClusterFacts(self, clock)  # its jobs' facts beyond their records, from the above
        self._confirm = confirm
        self._gate: Any = None
        self._names: tuple[Any, dict[str, None]] = ((), {})

    def start_poller(self, on_poll: Callable[[ClusterSnapshot, PollStatus], Awaitable[None]], *,
                     clock: Callable[[], float], node_kinds: dict | None = None) -> Poller:
        self.poller = Poller(self.backend, on_poll, intervals_of(self.config), clock=clock, node_kinds=node_kinds or {})
        return self.poller

    def node_names(self) -> KeysView[str]:
        """Its nodes' names, in its latest snapshot: what its watches may ask (the main views
        still show the cluster left for a moment after a switch, until their rows are rebuilt).
        Kept as a dict's keys, not a frozenset: a dict of str to None is not tracked by the
        cyclic GC, a set always is (20k nodes: 20k references every full collection walked)."""
        nodes = self.snapshot.nodes if self.snapshot is not None else ()
        if self._names[0] is not nodes:
            self._names = (nodes, dict.fromkeys(n.name for n in nodes))
        return self._names[1].keys()

    @property
    def telemetry_state(self) -> str:
        """"on", or why its GPU telemetry is off ("off (...)")."""
        return self.telemetry_off or "on"

    @property
    def backend_name(self) -> str:
        return self.backend.name

    @property
    def simulated(self) -> bool:
        return self.backend.capabilities().simulated

    @property
    def label(self) -> str:
        """The cluster's name as the screens show it ('' for a session without [clusters.NAME])."""
        return self.name

    def gate(self) -> Any:
        """This cluster's gate: its executor and its audit log (lines name the cluster).
        Raises ConfigError when the audit log path is unusable."""
        if self._gate is None:
            from cockpit.core.actions import actions_for_backend

            self._gate = actions_for_backend(self.backend, self.config, read_only=self.read_only,
                                             confirm=self._confirm(self) if self._confirm else None)
        return self._gate

    @property
    def gate_description(self) -> str:
        return self._gate.description if self._gate is not None else ""

    def poll_status(self) -> PollStatus | None:
        """Its poller's status now (age, stale, cause), or the last one posted."""
        return self.poller.status() if self.poller is not None else self.status

    async def close(self) -> None:
        """Stop its node reads and close its probe runner (its backend is its session's)."""
        if self.poller is not None:
            await self.poller.close()
        if self.probes is not None:
            await self.probes.close()
