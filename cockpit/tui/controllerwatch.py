"""Is slurmctld healthy? The ``controller`` kind of the App's poller: ``sdiag``
through the backend (the CLI's runner, pyslurm's local commands, a replay's
recorded sdiag.txt) every CONTROLLER_INTERVAL seconds, judged by
cockpit.core.schedhealth; the Pulse shows one line while something is wrong.
A backend that cannot read it (the demo) is never asked."""

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
    """The Pulse's controller line: None while slurmctld looks healthy (or could not be read)."""

    def __init__(self, line: str | None) -> None:
        super().__init__()
        self.line = line

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ControllerUpdated)


def _reader(backend: Any):
    stats = backend.capabilities().scheduler_stats  # pyslurm: the same Slurm's sdiag (its CLI twin)
    return None if stats is None else stats.fetch_sched_stats


class ControllerWatch:
    def __init__(self, app: CockpitApp, backend: Any, interval: float = CONTROLLER_INTERVAL) -> None:
        self.app, self.interval = app, interval
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
        self.app.post_message(ControllerUpdated(line))
