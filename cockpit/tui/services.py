"""What a screen is handed: the services of the cluster it was opened for.

With several clusters in one session (``cockpit --cluster all``) the main views
follow the cluster in front (``:cluster NAME``, ``c``), while a screen opened
for cluster X keeps asking X: it receives X's :class:`ClusterServices` in its
constructor (as Harlequin's history screen receives its ``History``) and never
fetches through ``self.app.backend``. The App's poll messages reach a screen
only for the cluster it is bound to (see ``CockpitApp.on_snapshot_updated``).

What a screen or widget asks of the App itself (copy a value, redraw the
breadcrumbs, the Pulse's facts about a job) is its :class:`ScreenHost`, obtained
through :func:`host_of`: cockpit's App, or :data:`NO_HOST` on any other App (a
Pilot test that mounts one screen alone), whose hooks do nothing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
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

    @property
    def backend_name(self) -> str: ...

    @property
    def simulated(self) -> bool: ...

    def gate(self) -> Any:
        """The one gate (cockpit.core.actions.Actions) with this cluster's executor and audit log."""


class ClusterBound:
    """Mixin for a screen bound to one cluster: ``services`` given in the constructor.

    A screen opened without one (a plugin's opener that predates the seam) is bound,
    once, to the cluster in front when it first asks, and stays on it after a switch."""

    _services: ClusterServices | None = None

    def bind_services(self, services: ClusterServices | None) -> None:
        self._services = services

    @property
    def services(self) -> ClusterServices:
        if self._services is None:
            self._services = self.app.services  # type: ignore[attr-defined]  # the cluster in front, once
        return self._services

    @property
    def cluster_name(self) -> str:
        return self.services.name


def services_for(app: Any) -> ClusterServices:
    """The cluster of what the operator looks at: the screen in front's when it is bound
    to one (``d`` on cluster X's node detail describes X's node), else the main views'."""
    screen = app.screen
    return screen.services if isinstance(screen, ClusterBound) else app.services


class JobFacts(Protocol):
    """What the App knows of a job beyond its record (cockpit/tui/viewing.py: Viewers)."""

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
    def viewers(self) -> JobFacts: ...

    @property
    def output_watch(self) -> OutputWatching | None:
        """The watch the Pulse's candidates go to; None while no output is watched."""

    @property
    def snapshot(self) -> ClusterSnapshot | None:
        """The latest snapshot of the cluster in front."""

    def clock(self) -> float:
        """Now, in seconds since the epoch: the App's clock (a test's fixed one)."""

    def copy_value(self, value: str, what: str) -> None:
        """Put ``value`` on the operator's clipboard and say so, naming ``what`` it is."""

    def update_crumbs(self) -> None:
        """Redraw the breadcrumbs after a screen's own title changed."""


class _NoFacts:
    def job_fate(self, job_id: Any) -> str:
        return "not in the queue"

    def hints_for(self, job_id: int) -> dict[str, Any]:
        return {}

    def output_mtime(self, job_id: int) -> float | None:
        return None

    def suspect_evidence(self, job_id: int) -> tuple[str, ...]:
        return ()


class NoHost:
    """The host of a screen on an App that is not cockpit's: there is no clipboard notice,
    no breadcrumbs, no output watch and no Pulse to ask; the default config (every column)
    and the wall clock."""

    config = Config()
    viewers: JobFacts = _NoFacts()
    output_watch: OutputWatching | None = None
    snapshot: ClusterSnapshot | None = None
    clock = staticmethod(time.time)

    def copy_value(self, value: str, what: str) -> None:
        pass

    def update_crumbs(self) -> None:
        pass


NO_HOST: ScreenHost = NoHost()


def host_of(node: DOMNode) -> ScreenHost:
    """The ScreenHost of the App ``node`` (a screen, a widget) is mounted on: cockpit's App,
    else :data:`NO_HOST`. Raises textual's NoActiveAppError when it is on none."""
    from cockpit.tui.app import CockpitApp  # the App imports the screens, which import this module

    app = node.app
    return app if isinstance(app, CockpitApp) else NO_HOST
