"""What a screen is handed: the services of the cluster it was opened for.

With several clusters in one session (``cockpit --cluster all``) the main views
follow the cluster in front (``:cluster NAME``, ``c``), while a screen opened
for cluster X keeps asking X: it receives X's :class:`ClusterServices` in its
constructor (as Harlequin's history screen receives its ``History``) and never
fetches through ``self.app.backend``. The App's poll messages reach a screen
only for the cluster it is bound to (see ``CockpitApp.on_snapshot_updated``).
"""

from __future__ import annotations

from typing import Any, Protocol

from cockpit.config import Config
from cockpit.models import ClusterSnapshot


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
