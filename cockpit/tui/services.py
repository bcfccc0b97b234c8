"""What a screen is handed: the services of the cluster it was opened for.

With several clusters in one session (``cockpit --cluster all``) the main views
follow the cluster in front (``:cluster NAME``, ``c``), while a screen opened
for cluster X keeps asking X: it receives X's :class:`ClusterServices` in its
constructor (as Harlequin's history screen receives its ``History``) and never
fetches through ``self.app.backend``. The App's poll messages reach a screen
only for the cluster it is bound to (see ``CockpitApp.on_snapshot_updated``).

What the App knows of a job beyond its record (when its output last changed, why
the Pulse suspects it, why it is not in the queue, what a runbook found) is its
cluster's too: :class:`JobFacts`, the ``facts`` of that cluster's services, read
from that cluster's own snapshot, tracker and watches' readings, so a detail opened
for cluster A never shows cluster B's facts for the same job id. A bound screen
never falls back to the cluster in front: opened without services, it is a bug
(:class:`ClusterBound` raises), not a screen that quietly shows another cluster.

What a screen or widget asks of the App itself (copy a value, redraw the
breadcrumbs, start an action flow) is its :class:`ScreenHost`, obtained through
:func:`host_of`: cockpit's App, or :data:`NO_HOST` on any other App (a Pilot test
that mounts one screen alone), whose hooks do nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from cockpit.config import Config
from cockpit.models import ClusterSnapshot

if TYPE_CHECKING:
    from textual.dom import DOMNode


class ClusterServices(Protocol):
    """One cluster's services (cockpit/tui/fleet.py: ClusterLink is the App's)."""

    name: str  # the [clusters.NAME], '' for a session without one
    backend: Any  # what core functions take (require_accounting, why_pending ...); asked by capability
    config: Config  # this cluster's: its audit log lines name it, its rest_url, host and intervals
    probes: Any  # read-only commands on its Slurm host and nodes; None when the backend brings none
    snapshot: ClusterSnapshot | None  # its latest, refreshed by its own poller
    telemetry: dict  # live GPU readings by (node, GPU index); empty where none are read
    facts: JobFacts  # what cockpit knows of its jobs beyond their records (cockpit/tui/jobfacts.py)

    @property
    def backend_name(self) -> str: ...

    @property
    def simulated(self) -> bool: ...

    def gate(self) -> Any:
        """The one gate (cockpit.core.actions.Actions) with this cluster's executor and audit log."""


class UnboundScreen(RuntimeError):
    """A cluster-bound screen asked for its services before it was given any."""


class ClusterBound:
    """Mixin for a screen bound to one cluster: ``services`` given in the constructor
    (required there), kept after any switch. There is no fallback to the cluster in
    front: that would show, or act on, another cluster's data under this one's ids."""

    _services: ClusterServices | None = None

    def bind_services(self, services: ClusterServices) -> None:
        """Raises UnboundScreen for None: every bound screen is opened for one cluster."""
        if services is None:
            raise UnboundScreen(f"{type(self).__name__} was opened without its cluster's services")
        self._services = services

    @property
    def services(self) -> ClusterServices:
        """Raises UnboundScreen when bind_services was never called (a subclass forgot it)."""
        if self._services is None:
            raise UnboundScreen(f"{type(self).__name__} has no cluster's services: it was never bound")
        return self._services

    @property
    def cluster_name(self) -> str:
        return self.services.name


def services_for(app: Any) -> ClusterServices:
    """The cluster of what the operator looks at: the screen in front's when it is bound
    to one (``d`` on cluster X's node detail describes X's node), else the main views'."""
    screen = app.screen
    return screen.services if isinstance(screen, ClusterBound) else app.services


class FleetServices(Protocol):
    """Every cluster of the session, what the fleet Pulse is handed (cockpit/tui/clusters.py: Fleet)."""

    links: Mapping[str, Any]  # name -> its ClusterLink: its services, poll status and watches' readings
    unopened: Mapping[str, str]  # name -> why it could not be opened
    first: ClusterServices  # the session's first cluster (its [tui] settings are the fleet Pulse's)
    current: ClusterServices  # the cluster in front

    def switch(self, name: str) -> str:
        """Show cluster ``name`` in the main views; '' or what was wrong, in words."""


class JobFacts(Protocol):
    """What cockpit knows of one cluster's job beyond its record (cockpit/tui/jobfacts.py:
    ClusterFacts), from that cluster's own tracker, watches and runbooks."""

    def job_fate(self, job_id: Any) -> str:
        """Why a job id is not in the queue ("left it 3m ago", "never seen")."""

    def hints_for(self, job_id: int) -> dict[str, Any]:
        """What a runbook found about the job (the straggler's node and rank)."""

    def output_mtime(self, job_id: int) -> float | None:
        """When the job's output last changed, if it is watched."""

    def suspect_evidence(self, job_id: int) -> tuple[str, ...]:
        """Why the Pulse suspects the job; () when it does not."""


class OutputWatching(Protocol):
    """The output watch (cockpit/tui/outputwatch.py: OutputWatch), as the Pulse feeds it."""

    def watch(self, candidates: Sequence[tuple[int, str, str]]) -> None:
        """The jobs to watch now: (job id, batch host, output path)."""


class ScreenHost(Protocol):
    """The App's hooks that screens and widgets use: CockpitApp is one, :data:`NO_HOST` the
    stand-in for any other App. A cluster's data comes from the screen's ClusterServices."""

    @property
    def config(self) -> Config: ...

    @property
    def output_watch(self) -> OutputWatching | None:
        """The watch the Pulse's candidates go to; None while no output is watched."""

    def clock(self) -> float:
        """Now, in seconds since the epoch: the App's clock (a test's fixed one)."""

    def copy_value(self, value: str, what: str) -> None:
        """Put ``value`` on the operator's clipboard and say so, naming ``what`` it is."""

    def update_crumbs(self) -> None:
        """Redraw the breadcrumbs after a screen's own title changed."""

    def start_action(self, services: ClusterServices, kind: str, targets: tuple[str, ...], name: str) -> None:
        """Run action ``name`` on ``targets`` through ``services``' gate (confirmed, audited)."""


class NoHost:
    """The host of a screen on an App that is not cockpit's: there is no clipboard notice,
    no breadcrumbs, no output watch and no gate to act through; the default config (every
    column) and the wall clock."""

    config = Config()
    output_watch: OutputWatching | None = None
    clock = staticmethod(time.time)

    def copy_value(self, value: str, what: str) -> None:
        pass

    def update_crumbs(self) -> None:
        pass

    def start_action(self, services: ClusterServices, kind: str, targets: tuple[str, ...], name: str) -> None:
        pass


NO_HOST: ScreenHost = NoHost()


def host_of(node: DOMNode) -> ScreenHost:
    """The ScreenHost of the App ``node`` (a screen, a widget) is mounted on: cockpit's App,
    else :data:`NO_HOST`. Raises textual's NoActiveAppError when it is on none."""
    from cockpit.tui.app import CockpitApp  # the App imports the screens, which import this module

    app = node.app
    return app if isinstance(app, CockpitApp) else NO_HOST
