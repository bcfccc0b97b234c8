"""Is slurmctld healthy? The ``controller`` kind of each cluster's poller: ``sdiag``
through that cluster's backend (the CLI's runner, pyslurm's local commands, a
replay's recorded sdiag.txt) every CONTROLLER_INTERVAL seconds, judged by
cockpit.core.schedhealth; the Pulse shows one line while something is wrong with
the cluster in front, the fleet Pulse one per cluster. A backend that cannot read
it (the demo) is never asked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.message import Message

from cockpit.core.poller import NodeKind
from cockpit.core.schedhealth import headline, judge
from cockpit.errors import CockpitError

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp

KIND = "controller"
# sdiag is one cheap RPC (REQUEST_STATS_INFO); a queue that builds up takes minutes, not seconds
CONTROLLER_INTERVAL = 30.0


class ControllerUpdated(Message):
    """The Pulse's controller line of ``cluster`` ('' for the one cluster of a session
    without [clusters.NAME]): None while slurmctld looks healthy (or could not be read)."""

    def __init__(self, line: str | None, cluster: str = "") -> None:
        super().__init__()
        self.line, self.cluster = line, cluster

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ControllerUpdated) and message.cluster == self.cluster


def _reader(backend: Any):
    stats = backend.capabilities().scheduler_stats  # pyslurm: the same Slurm's sdiag (its CLI twin)
    return None if stats is None else stats.fetch_sched_stats


class ControllerWatch:
    def __init__(self, app: CockpitApp, backend: Any, interval: float = CONTROLLER_INTERVAL, *,
                 cluster: str = "") -> None:
        """``backend``: the cluster's whose slurmctld is judged; ``cluster``: its name, in the messages."""
        self.app, self.interval, self.cluster = app, interval, cluster
        self.read = None if backend.capabilities().simulated else _reader(backend)
        self.error = ""

    def node_kind(self) -> NodeKind:
        return NodeKind(fetch=self.fetch, wanted=self.wanted, deliver=self.deliver, interval=self.interval)

    def wanted(self) -> tuple[str, ...]:
        return ("slurmctld",) if self.read is not None else ()

    async def fetch(self, _nodes: tuple[str, ...]) -> str | None:
        try:
            stats = await self.read()
        except CockpitError as exc:  # no sdiag here (a replay without one): say nothing, ask no more
            self.error, self.read = str(exc), None
            return None
        return headline(judge(stats))

    def deliver(self, _nodes: tuple[str, ...], line: str | None) -> None:
        self.app.post_message(ControllerUpdated(line, self.cluster))
