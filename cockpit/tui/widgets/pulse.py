"""Pulse: the one-glance overview. Summaries are computed in a worker thread.

Recent changes compare each snapshot with the previous one (node states, job
states); they are tracked even while the view is hidden, so nothing is missed.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import work
from textual.containers import VerticalScroll
from textual.widgets import Static

from cockpit.text import clean
from cockpit.models import ClusterSnapshot
from cockpit.tui.rows import NODE_SYMBOL, duration

MAX_CHANGES = 40


@dataclass(frozen=True)
class PulseData:
    node_states: tuple[tuple[str, int], ...]
    gpus: tuple[tuple[str, int, int, int], ...]  # partition, alloc, total, idle usable
    pending: tuple[tuple[str, int], ...]
    running: int
    pending_total: int
    bad_nodes: tuple[tuple[str, str, str, str, int | None], ...]  # name, state, reason, user, since
    changes: tuple[tuple[float, str, str], ...]  # when, what, style


def summarise(snap: ClusterSnapshot) -> dict[str, Any]:
    """Counts for the pulse view (pure; raises nothing)."""
    states = Counter(n.display_state for n in snap.nodes)
    nodes = {n.name: n for n in snap.nodes}
    gpus = []
    for p in snap.partitions:
        members = [nodes[x] for x in p.nodes if x in nodes]
        gpus.append((p.name, sum(n.gpu_alloc for n in members), sum(n.gpu_total for n in members),
                     sum(n.gpu_total - n.gpu_alloc for n in members if not n.is_unavailable)))
    pend = Counter(j.reason or "None" for j in snap.jobs if j.state == "PENDING")
    bad = sorted((n for n in snap.nodes if n.is_unavailable or "not_responding" in n.flags),
                 key=lambda n: (n.reason_time or 0, n.name))
    return {
        "node_states": tuple(sorted(states.items(), key=lambda kv: -kv[1])),
        "gpus": tuple(gpus),
        "pending": tuple(pend.most_common(8)),
        "running": sum(1 for j in snap.jobs if j.state == "RUNNING"),
        "pending_total": sum(pend.values()),
        "bad_nodes": tuple((n.name, n.display_state, n.reason or "", n.reason_user or "", n.reason_time) for n in bad),
    }


class ChangeTracker:
    """Remembers node and job states of the last snapshot and lists what changed."""

    def __init__(self) -> None:
        self.nodes: dict[str, str] | None = None
        self.jobs: dict[int, str] | None = None
        self.recent: deque[tuple[float, str, str]] = deque(maxlen=MAX_CHANGES)

    def feed(self, snap: ClusterSnapshot, when: float) -> None:
        nodes = {n.name: n.display_state for n in snap.nodes}
        jobs = {j.job_id: j.state for j in snap.jobs}
        if self.nodes is not None:
            for name, st in nodes.items():
                old = self.nodes.get(name)
                if old is not None and old != st:
                    self.recent.appendleft((when, f"node {name}: {old} → {st}", st))
        if self.jobs is not None:
            started = sum(1 for k, st in jobs.items() if st == "RUNNING" and self.jobs.get(k) not in (None, "RUNNING"))
            new = sum(1 for k in jobs if k not in self.jobs)
            gone = sum(1 for k in self.jobs if k not in jobs)
            if started or new or gone:
                self.recent.appendleft((when, f"jobs: {new} submitted, {started} started, {gone} left the queue", ""))
        self.nodes, self.jobs = nodes, jobs


class PulseView(VerticalScroll):
    DEFAULT_CSS = """
    PulseView { height: 1fr; }
    PulseView > Static { width: 1fr; }
    """
    kind, title = "pulse", "Pulse"

    def __init__(self, clock, **kw: Any) -> None:
        super().__init__(id="view-pulse", **kw)
        self.clock = clock
        self.body = Static("waiting for the first data…", id="pulse-body")
        self.tracker = ChangeTracker()
        self._lock = threading.Lock()
        self._data: PulseData | None = None
        self._pending: ClusterSnapshot | None = None
        self.table = None  # no table: actions do not apply here

    def compose(self):
        yield self.body

    def set_snapshot(self, snap: ClusterSnapshot, visible: bool) -> None:
        self._pending = snap  # read by the worker, not passed to it: see TableView._build
        self._compute(visible)

    def show_if_dirty(self) -> None:
        if self._data is not None:
            self.body.update(self.render_data(self._data))

    def set_filter(self, text: str) -> str:
        return "the pulse view has no filter; switch to a table view (1-5)"

    @work(thread=True, exclusive=True, group="pulse", description="pulse summary")
    def _compute(self, visible: bool) -> None:
        with self._lock:
            snap, self._pending = self._pending, None
            if snap is None:
                return  # a later worker took it
            summary = summarise(snap)
            self.tracker.feed(snap, snap.fetched_at or self.clock())
            data = PulseData(changes=tuple(self.tracker.recent), **summary)
        try:
            self.app.call_from_thread(self._apply, data, visible)
        except RuntimeError:  # NoActiveAppError / "App is not running": quit while computing
            pass

    def _apply(self, data: PulseData, visible: bool) -> None:
        self._data = data
        if visible or self.display:
            self.body.update(self.render_data(data))

    def render_data(self, d: PulseData) -> Table:
        now = self.clock()
        grid = Table.grid(padding=(0, 2), expand=True)
        grid.add_column(ratio=1)
        grid.add_column(ratio=1)
        left, right = Text(), Text()
        left.append("NODES BY STATE\n", style="bold underline")
        for st, n in d.node_states:
            left.append(f" {NODE_SYMBOL.get(st, '?')} {st:<10}{n:>6}\n", style=_style(node_style_word(st)))
        left.append("\nGPUS PER PARTITION  alloc/total idle\n", style="bold underline")
        for name, alloc, total, idle in d.gpus:
            left.append(f" {clean(name, 14):<14} {alloc:>6}/{total:<6} {idle:>5}\n")
        right.append(f"JOBS  ▶ {d.running} running  … {d.pending_total} pending\n", style="bold underline")
        for reason, n in d.pending:
            right.append(f" {clean(reason, 24):<24}{n:>7}\n")
        right.append(f"\nDRAINED / DOWN ({len(d.bad_nodes)})\n", style="bold underline")
        for name, st, reason, user, since in d.bad_nodes[:12]:
            age = duration(now - since) if since else ""
            right.append(f" {NODE_SYMBOL.get(st, '?')} {clean(name, 12):<12} {st:<9} {age:>6} ", style=_style(node_style_word(st)))
            right.append(clean(reason, 30) + (f" ({clean(user, 10)})" if user else "") + "\n")
        if len(d.bad_nodes) > 12:
            right.append(f" … and {len(d.bad_nodes) - 12} more (see :nodes, filter state:drain)\n")
        grid.add_row(left, right)
        changes = Text("RECENT CHANGES\n", style="bold underline")
        if not d.changes:
            changes.append(" none since start\n")
        for when, what, st in d.changes[:10]:
            changes.append(f" {duration(now - when) or '0s':>6} ago  ", style="dim")
            changes.append(clean(what, 100) + "\n", style=_style(node_style_word(st)))
        grid.add_row(changes, Text())
        return grid


def node_style_word(state: str) -> str:
    return {"down": "down", "error": "down", "drained": "drain", "draining": "drain"}.get(state, "")


def _style(word: str) -> str:
    return {"down": "bold red", "drain": "bold yellow"}.get(word, "")
