"""When each running job's output last changed: the ``output`` node kind of a cluster's poller.

Each cluster (cockpit/tui/fleet.py: ClusterLink) has its own watch. The Pulse's
worker picks the jobs to watch for the cluster in front (running, with an output
path, the largest by GPUs first, at most MAX_WATCHED), the cluster's own
background worker for the others (cockpit/tui/watches.py), and hands them here as
(job id, batch host, path). Every ``[tui] watch_output`` seconds the poller
asks :meth:`OutputWatch.fetch` for the batch hosts: files readable here are
stat-ed here (in a thread; never for a simulated cluster, whose files are on
its simulated nodes), the others with one ``stat`` per batch host through that
cluster's probe runner (SSH on a real cluster, the demo's simulated nodes).
The result, {job id: mtime}, goes to the App as :class:`OutputUpdated`, naming the cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from textual.message import Message

from cockpit.core.joblog import local_mtimes, parse_mtimes, stat_argv
from cockpit.core.poller import NodeKind
from cockpit.errors import CockpitError

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.fleet import ClusterLink

KIND = "output"
MAX_WATCHED = 256
WINDOW = 32  # batch hosts asked at once


class OutputUpdated(Message):
    """{job id: epoch of its output's last change} for the jobs watched on ``cluster``
    ('' for the one cluster of a session without [clusters.NAME])."""

    def __init__(self, mtimes: dict[int, float], cluster: str = "") -> None:
        super().__init__()
        self.mtimes, self.cluster = mtimes, cluster

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, OutputUpdated) and message.cluster == self.cluster


def output_blocker(config: Any, probes: Any, simulated: bool) -> tuple[bool, bool, str]:
    """(read here, read on the nodes, why neither) for this session."""
    from cockpit.remote.settings import SshSettings

    if config.tui.watch_output <= 0:
        return False, False, "off ([tui] watch_output = 0)"
    remote = probes is not None and probes.available and (
        simulated or bool(config.general.host or config.ssh.jump_host or SshSettings.from_config(config).config_paths()))
    local = not simulated and not config.general.host
    return local, remote, "" if (local or remote) else "off (no way to read the jobs' output files)"


class OutputWatch:
    def __init__(self, app: CockpitApp, link: ClusterLink, interval: float, *, local: bool, remote: bool) -> None:
        """``link``: the cluster whose jobs these are (its probe runner reads them, its poller runs this kind)."""
        self.app, self.link, self.probes = app, link, link.probes
        self.interval = max(5.0, float(interval))
        self.local, self.remote = local, remote
        self.candidates: tuple[tuple[int, str, str], ...] = ()
        self.mtimes: dict[int, float] = {}
        self.errors: dict[str, str] = {}

    def node_kind(self) -> NodeKind:
        return NodeKind(fetch=self.fetch, wanted=self.wanted, deliver=self.deliver, interval=self.interval)

    def watch(self, candidates: Sequence[tuple[int, str, str]]) -> None:
        """The jobs to watch now: (job id, batch host, output path); jobs new to the
        watch are read at once (the poller's node kind is asked), the rest on the interval."""
        own = self.link.node_names()  # never another cluster's job, handed on during a switch
        new = tuple(c for c in candidates if c[1] in own)
        fresh = {c[0] for c in new} - {c[0] for c in self.candidates}
        self.candidates = new
        if fresh:
            self.link.poller.ask(KIND, {c[1] for c in new if c[0] in fresh})

    def wanted(self) -> set[str]:
        return {host for _jid, host, _path in self.candidates}

    async def fetch(self, nodes: tuple[str, ...]) -> dict[int, float]:
        polled = set(nodes)
        items = [c for c in self.candidates if c[1] in polled]
        found: dict[int, float] = {}
        if self.local:
            here = await asyncio.to_thread(local_mtimes, sorted({p for _j, _h, p in items}))
            found.update({j: here[p] for j, _h, p in items if p in here})
        if self.remote:
            by_node: dict[str, list[tuple[int, str]]] = {}
            for j, host, path in items:
                if j not in found:
                    by_node.setdefault(host, []).append((j, path))
            gate = asyncio.Semaphore(WINDOW)

            async def one(node: str, jobs: list[tuple[int, str]]) -> None:
                async with gate:
                    try:
                        res = await self.probes.run(node, stat_argv(sorted({p for _j, p in jobs})))
                    except CockpitError as exc:
                        self.errors[node] = str(exc)
                        return
                self.errors.pop(node, None)
                times = parse_mtimes(res.text(), [p for _j, p in jobs])
                found.update({j: times[p] for j, p in jobs if p in times})

            await asyncio.gather(*(one(n, js) for n, js in by_node.items()))
        return found

    def deliver(self, nodes: tuple[str, ...], found: dict[int, float]) -> None:
        polled = set(nodes)
        asked = {j for j, host, _p in self.candidates if host in polled}
        watched = {j for j, _h, _p in self.candidates}
        mtimes = {j: t for j, t in self.mtimes.items() if j in watched and j not in asked}
        mtimes.update(found)
        self.mtimes = mtimes
        self.app.post_message(OutputUpdated(dict(mtimes), self.link.name))
