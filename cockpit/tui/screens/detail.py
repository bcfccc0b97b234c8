"""Drill-down screens: job -> its nodes -> node -> its jobs. Escape (or q) goes back.

Each opens with the list of links focused, so ``Enter`` ``Enter`` goes from a job
row to its first node (the straggler's node first, once the hung-job runbook
named one). Above the links: what matters at a glance; below: every field and,
for a job, the tails of its output files where they are readable here.
"""

from __future__ import annotations

import os
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from cockpit.models import ClusterSnapshot, Job, Node, gpus_by_node
from cockpit.models.cluster import or_unknown, record_fields
from cockpit.text import clean, tail_lines
from cockpit.tui.gresview import gres_pairs
from cockpit.tui.rows import duration, gpu_holders, job_state_text, limit_text, mem_gib, node_state_text
from cockpit.tui.widgets.crumbs import Breadcrumb
from cockpit.tui.services import ClusterBound, ClusterServices, host_of

TAIL_BYTES = 16384
TAIL_LINES = 12


def _unread(record: Node | Job, field: str) -> str:
    # the cell says why it is "?": the detail is on the problems screen (!)
    return "  (could not be read; ! lists why)" if field in record.unknown else ""


def _fmt_time(epoch: Any, now: float) -> str:
    import time as _t

    if not epoch:
        return ""
    stamp = _t.strftime("%Y-%m-%d %H:%M:%S", _t.gmtime(epoch))
    delta = now - epoch
    return f"{stamp} UTC ({duration(abs(delta))} {'ago' if delta >= 0 else 'from now'})"


def _kv_table(pairs: list[tuple[str, str]]) -> Table:
    t = Table.grid(padding=(0, 1))
    t.add_column(style="bold", no_wrap=True)
    t.add_column(overflow="fold")
    for k, v in pairs:
        t.add_row(k, v if isinstance(v, Text) else Text(v))  # Text: cluster strings are never markup
    return t


def read_tail(path: str) -> list[str] | None:
    """Last lines of a local file, or None when it is not readable here."""
    if not path or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - TAIL_BYTES))
            return tail_lines(fh.read(), TAIL_LINES)
    except OSError:
        return None


def telemetry_words(t: dict[str, Any]) -> str:
    """``0% util, mem 87%, 43°C, 124 W, ECC 0, throttle none, idle 12 min`` (or the read's error)."""
    if "error" in t:
        return f"no telemetry: {clean(t['error'], 120)}"
    parts = []
    for key, fmt in (("util", "{:.0f}% util"), ("mem", "mem {:.0f}%"), ("temp", "{:.0f}°C"), ("power", "{:.0f} W"),
                     ("ecc", "ECC {}"), ("throttle", "throttle {}"), ("low_util_for", "idle {}")):
        v = t.get(key)
        if v is not None:
            parts.append(fmt.format(clean(v, 20) if isinstance(v, str) else v))
    return ", ".join(parts)


class DetailScreen(ClusterBound, Screen):
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="detail.back")]
    AUTO_FOCUS = "OptionList"  # the links: Enter opens the first at once
    DEFAULT_CSS = """
    DetailScreen VerticalScroll { height: 1fr; }
    DetailScreen OptionList { height: auto; max-height: 12; }
    DetailScreen .title { background: $panel; text-style: bold; height: 1; }
    DetailScreen .section { text-style: bold underline; margin-top: 1; }
    """

    def __init__(self, key: Any, *, services: ClusterServices) -> None:
        """``services``: the cluster of the job or node (cockpit/tui/services.py)."""
        super().__init__()
        self.bind_services(services)
        self.key = key
        self.body = Static("", classes="body")
        self.links_title = Static("", classes="section")
        self.links = OptionList()
        self.extra = Static("")
        self._shown = False

    @property
    def crumb(self) -> str:
        return str(self.key)

    def compose(self) -> ComposeResult:
        yield Breadcrumb()
        yield Static("", classes="title", id="detail-title")
        with VerticalScroll():
            yield self.body
            yield self.links_title
            yield self.links
            yield self.extra
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.refresh_snapshot(self.services.snapshot)

    def refresh_snapshot(self, snap: ClusterSnapshot | None) -> None:
        raise NotImplementedError

    def _set_links(self, title: str, options: list[Option]) -> None:
        highlighted = self.links.highlighted
        self.links.clear_options()
        self.links.add_options(options)
        self.links.display = self.links_title.display = bool(options)
        self.links_title.update(Text(title))
        if options:
            self.links.highlighted = min(highlighted or 0, len(options) - 1)
        if not self._shown:  # highlighting scrolls the page to the list: the first time, back to the top
            self._shown = True
            self.call_after_refresh(self.query_one(VerticalScroll).scroll_home, animate=False)


class JobDetailScreen(DetailScreen):
    """One job at a glance, its nodes (Enter opens one), every field, its log tails."""

    def refresh_snapshot(self, snap: ClusterSnapshot | None) -> None:
        job = next((j for j in snap.jobs if j.job_id == self.key), None) if snap else None
        title = self.query_one("#detail-title", Static)
        if job is None:
            fate = self.services.facts.job_fate(self.key)
            title.update(Text(f" job {self.key}: {fate}"))
            return
        title.update(Text(f" job {job.display_id}  {clean(job.name, 60)}  {job_state_text(job)}"))
        self.body.update(self.glance(job))
        hints = self.services.facts.hints_for(job.job_id)
        first = hints.get("straggler_node")
        gpus = gpus_by_node(job.gpus)  # one line a node, every GPU type's indexes on it
        opts = []
        for node in sorted(job.nodes, key=lambda n: n != first):
            g = gpus.get(node)
            idx = ",".join(map(str, g.indexes)) if g else ""
            label = Text(f"→ {clean(node, 30)}" + (f"  GPUs {clean(g.type or 'gpu', 10)} [{idx}]" if g else ""))
            if node == first:
                label.append(f"  ← straggler: rank {clean(hints.get('straggler_rank', '?'), 12)} "
                             "(hung-job runbook)", style="bold")
            opts.append(Option(label, id=f"node:{node}"))
        self._set_links(f"Nodes ({len(job.nodes)}): enter opens one", opts)
        self._fields = self.job_table(job)
        self._show_logs(getattr(self, "_logs", Text("")))
        self.load_logs(job.stdout, job.stderr)

    def glance(self, job: Job) -> Table:
        now = host_of(self).clock()
        reason = or_unknown(job, "reason", clean(job.reason, 100) if job.reason not in ("", "None") else "")
        pairs = [("state", Text(or_unknown(job, "state", job_state_text(job)) + (f"  reason: {reason}" if reason else "")
                                + _unread(job, "state")))]
        pairs.append(("user", Text(f"{clean(job.user, 30)} (account {clean(job.account or '-', 30)})")))
        pairs.append(("partition", Text(clean(job.partition, 60))))
        elapsed = duration(now - job.start_time) if job.state == "RUNNING" and job.start_time else ""
        pairs.append(("time", Text(f"{elapsed or '-'} of {limit_text(job.time_limit)}")))
        pairs.append(("GPUs", Text(f"{job.gpu_count} x {clean(job.gpu_type or 'gpu', 20)}"
                                   f" on {len(job.nodes) or job.node_count} node(s)")))
        facts = self.services.facts
        mtime = facts.output_mtime(job.job_id)
        if mtime:
            pairs.append(("last output", Text(f"{duration(now - mtime) or '0s'} ago")))
        evidence = facts.suspect_evidence(job.job_id)
        if evidence:
            pairs.append(("suspect", Text("; ".join(evidence), style="bold")))
        return _kv_table(pairs)

    def job_table(self, job: Job) -> Table:
        now = host_of(self).clock()
        pairs = []
        for name in record_fields(job):
            v = getattr(job, name)
            if name in ("submit_time", "start_time", "end_time"):
                v = _fmt_time(v, now)
            elif name == "time_limit":
                v = limit_text(v)
            elif name == "gpus":
                v = "; ".join(f"{g.node}: {g.type or 'gpu'}x{g.count} idx {','.join(map(str, g.indexes))}" for g in v)
            elif isinstance(v, (tuple, frozenset)):
                v = ",".join(sorted(map(str, v))) if isinstance(v, frozenset) else ",".join(map(str, v))
            pairs.append((name, clean("" if v is None else v, 200)))
        pairs.insert(1, ("display id", job.display_id))
        return _kv_table(pairs)

    @work(thread=True, exclusive=True, group="logs", description="read log tails")
    def load_logs(self, stdout: str, stderr: str) -> None:
        out = Text()
        for label, path in (("stdout", stdout), ("stderr", stderr)):
            if not path or (label == "stderr" and path == stdout):
                continue
            lines = read_tail(path)
            out.append(f"\n{label}: ", style="bold")
            out.append(clean(path, 200))
            if lines is None:
                out.append("  (not readable from here: f follows it on its node)\n", style="dim")
                continue
            out.append("\n")
            for line in lines:
                out.append("  " + clean(line, 300) + "\n")
        try:
            self.app.call_from_thread(self._show_logs, out)
        except RuntimeError:  # NoActiveAppError / "App is not running": quit while reading
            pass

    def _show_logs(self, text: Text) -> None:
        self._logs = text
        table = Table.grid()
        table.add_column()
        table.add_row(Text("All fields", style="bold underline"))
        table.add_row(getattr(self, "_fields", Text("")))
        table.add_row(text)
        self.extra.update(table)
        # Seen with Python 3.13 (Debian 13): the update from this thread's callback
        # repainted the text but the Static kept its old height (1 line, the rest
        # clipped) until something else caused a layout; ask for one once more.
        self.call_after_refresh(self.extra.refresh, layout=True)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        oid = event.option.id or ""
        if oid.startswith("node:"):
            self.app.push_screen(NodeDetailScreen(oid[5:], services=self.services))


class NodeDetailScreen(DetailScreen):
    """State, reason (who, when), each GPU index with its holder, jobs on the node."""

    class Shown(Message):
        """This node's detail came on screen (the App polls its GPUs at once)."""

        def __init__(self, node: str) -> None:
            super().__init__()
            self.node = node

    def on_screen_resume(self) -> None:
        self.post_message(self.Shown(str(self.key)))

    def refresh_snapshot(self, snap: ClusterSnapshot | None) -> None:
        node = next((n for n in snap.nodes if n.name == self.key), None) if snap else None
        title = self.query_one("#detail-title", Static)
        if node is None:
            title.update(Text(f" node {clean(self.key, 40)}: not known to Slurm any more"))
            return
        title.update(Text(f" node {clean(node.name, 40)}  {node_state_text(node)}"))
        jobs = [j for j in snap.jobs if node.name in j.nodes]
        self.body.update(self.node_table(node, snap))
        self._set_links(f"Jobs on this node ({len(jobs)}): enter opens one", [
            Option(Text(f"→ job {j.display_id}  {clean(j.user, 12)}  {clean(j.name, 30)}  {j.state.lower()}"), id=f"job:{j.job_id}")
            for j in jobs
        ])
        self.extra.update(Text("" if jobs else "\nno jobs on this node"))

    def node_table(self, node: Node, snap: ClusterSnapshot) -> Table:
        now = host_of(self).clock()
        pairs = [
            ("state", or_unknown(node, "state", f"{node.display_state} (base {node.state}; flags "
                                                f"{', '.join(sorted(node.flags)) or 'none'})") + _unread(node, "state")),
            ("reason", or_unknown(node, "reason", clean(node.reason or "", 200)) + _unread(node, "reason")),
            ("set by", clean(node.reason_user or "", 40)),
            ("set at", _fmt_time(node.reason_time, now)),
            ("cpus", f"{node.alloc_cpus}/{node.cpus} allocated"),
            ("memory", f"{mem_gib(node.alloc_memory_mb, node.memory_mb)} GiB allocated"),
            ("GPUs", f"{node.gpu_cell} allocated" + (" (whole GPUs)" if node.mig else "") + _unread(node, "gpus")),
            *gres_pairs(node),
            ("partitions", clean(",".join(node.partitions), 200)),
            ("features", clean(",".join(node.features), 200)),
            ("address", clean(node.address or "", 60)),
            ("boot", _fmt_time(node.boot_time, now)),
            ("switches", " → ".join(snap.topology.path(node.name)) or "—"),
        ]
        table = _kv_table(pairs)
        holders = gpu_holders([j for j in snap.jobs if node.name in j.nodes])
        tele = self.services.telemetry
        idx = 0
        for group in node.gpus:
            for _ in range(group.count):
                job = holders.get((node.name, idx))
                if job:
                    who = f"job {job.display_id} user {clean(job.user, 16)}"
                elif idx in group.alloc_indexes:
                    who = "allocated (job unknown)"
                else:
                    who = "idle" + (" — node unavailable" if node.is_unavailable else "")
                t = tele.get((node.name, idx))
                if t:
                    who += "  " + telemetry_words(t)
                table.add_row(f"GPU {idx} {clean(group.type or '', 8)}", Text(who))
                idx += 1
        return table

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        oid = event.option.id or ""
        if oid.startswith("job:"):
            self.app.push_screen(JobDetailScreen(int(oid[4:]), services=self.services))
