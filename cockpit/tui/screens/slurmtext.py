"""What Slurm says, in its own words: ``d`` (describe) and ``L`` (Slurm's logs).

``d`` on a job or node shows ``scontrol show job ID`` / ``scontrol show node NAME``
as text, asked where Slurm's commands run (the probe runner's Slurm host: here,
``--host``, or the demo's simulated controller). ``L`` shows the last lines of
slurmctld's log and, for a node, of its slurmd's log: the paths come from
``scontrol show config``; a file readable here is read here (never for a
simulated cluster), else with ``tail`` on the Slurm host or on the node through
the probe runner. ``L`` on a job shows slurmctld's lines that name the job
first, or says that none of the lines read does. What comes back is cluster data: sanitized, shown as Text.
"""

from __future__ import annotations

import re
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, RichLog, Static

from cockpit.core.joblog import JobLogError, tail_lines
from cockpit.errors import CockpitError
from cockpit.plugins.specs import ScreenOffers
from cockpit.text import clean, sanitize
from cockpit.tui.widgets.crumbs import Breadcrumb
from cockpit.tui.services import ClusterBound, ClusterServices

LOG_LINES = 200
JOB_SCAN_LINES = 5000  # L on a job: its lines are looked for this far back in slurmctld's log


def config_value(text: str, key: str) -> str:
    """``Key = value`` from ``scontrol show config`` ('' when absent or (null))."""
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == key:
            value = value.strip()
            return "" if value in ("(null)", "") else value
    return ""


class SlurmTextScreen(ClusterBound, ScreenOffers, Screen):
    """A title and text lines; ``r`` asks again, ``y`` copies what the title names."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="slurmtext.back"),
                Binding("r", "reload", "Reload", id="slurmtext.reload")]
    DEFAULT_CSS = """
    SlurmTextScreen #st-title { background: $panel; text-style: bold; height: auto; max-height: 2; }
    SlurmTextScreen RichLog { height: 1fr; }
    """
    crumb = ""
    follow_end = True  # a log's newest lines are at its end; a description is read from its top

    def compose(self) -> ComposeResult:
        yield Breadcrumb()
        yield Static("", id="st-title")
        yield RichLog(max_lines=10_000, wrap=True, markup=False, auto_scroll=self.follow_end, id="st-text")
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.call_after_refresh(self.action_reload)  # laid out first: lines wrap at the pane's width

    def action_reload(self) -> None:
        self.query_one(RichLog).clear()
        self._load()

    def title_line(self, text: str) -> None:
        self.query_one("#st-title", Static).update(Text(" " + text))

    def lines(self, lines: Any, style: str = "") -> None:
        log = self.query_one(RichLog)
        # Wrapped at the pane's width once it is known (RichLog otherwise measures against
        # the console's, which is 80 columns in a headless run whatever the screen's size).
        width = log.scrollable_content_region.width or None
        for line in lines:
            log.write(Text(sanitize(line), style=style), width=width)

    @work(exclusive=True, group="slurmtext")
    async def _load(self) -> None:
        await self.load()

    async def load(self) -> None:
        raise NotImplementedError


class DescribeScreen(SlurmTextScreen):
    """``scontrol show job|node NAME`` as Slurm prints it, from its first line."""

    follow_end = False

    def __init__(self, kind: str, name: str, *, services: ClusterServices) -> None:
        super().__init__()
        self.bind_services(services)
        self.kind, self.target = kind, name
        self.crumb = f"scontrol show {kind}"

    def targets(self) -> tuple[str, tuple[str, ...]]:
        return self.kind, (self.target,)

    def copy_text(self) -> tuple[str, str]:
        return self.target, f"the {self.kind} {'id' if self.kind == 'job' else 'name'}"

    async def load(self) -> None:
        argv = ["scontrol", "show", self.kind, self.target]
        whose = "the demo's simulated Slurm, not a real one" if self.services.simulated else "Slurm's own words"
        self.title_line(f"{' '.join(argv)}  ({whose}; r asks again)")
        probes = self.services.probes
        if probes is None:
            self.lines([f"{self.services.backend_name} has no Slurm host to ask"], "bold red")
            return
        out = await probes.on_slurm_host(argv)
        if not out.ok:
            self.lines([f"{' '.join(argv)} failed: {out.error or 'no answer'}"], "bold red")
            fields = self.known_fields()
            if fields:
                self.lines(["", "what cockpit's last snapshot holds (not Slurm's words):"], "bold")
                self.lines(fields)
        self.lines(out.text.splitlines())

    def known_fields(self) -> list[str]:
        """``field=value`` lines of the job or node in the App's snapshot ([] when absent)."""
        from cockpit.models import record_fields

        snap = self.services.snapshot
        if snap is None:
            return []
        items = snap.jobs if self.kind == "job" else snap.nodes
        key = (lambda j: str(j.job_id)) if self.kind == "job" else (lambda n: n.name)
        obj = next((x for x in items if key(x) == self.target), None)
        if obj is None:
            return []
        return [f"{name}={clean(getattr(obj, name), 300)}" for name in record_fields(obj)]


def job_lines(lines: list[str], job: str) -> list[str]:
    """The log lines that name ``job`` as slurmctld does (``JobId=7``, an array task's
    ``JobId=4_2(9)``, a het component's ``JobId=5+1(6)``)."""
    base = job.split("_")[0].split("+")[0]
    named = re.compile(rf"(?i)\bjob_?id[=\s]{re.escape(job)}(?![\d])|\({re.escape(base)}\)|\bjob_?id={re.escape(base)}(?![\d])")
    return [ln for ln in lines if named.search(ln)]


class SlurmLogsScreen(SlurmTextScreen):
    """The end of slurmctld's log, and of ``node``'s slurmd log when a node is given; for
    a ``job``, slurmctld's lines that name it first (or that none of them do)."""

    def __init__(self, node: str | None = None, job: str | None = None, *,
                 services: ClusterServices) -> None:
        super().__init__()
        self.bind_services(services)
        self.node, self.job = node, job
        self.follow_end = not job  # a job's lines lead: shown from the top
        self.crumb = "Slurm logs" + (f" ({node})" if node else f" (job {job})" if job else "")

    def targets(self) -> tuple[str, tuple[str, ...]]:
        if self.job:
            return "job", (self.job,)
        return ("node", (self.node,)) if self.node else ("", ())

    async def load(self) -> None:
        self.title_line("slurmctld" + (f" and slurmd on {clean(self.node, 40)}" if self.node else "")
                        + (f", job {clean(self.job, 30)}'s lines first" if self.job else "")
                        + f": the last {LOG_LINES} lines (r asks again)")
        probes = self.services.probes
        if probes is None:
            self.lines([f"{self.services.backend_name} has no Slurm host to ask"], "bold red")
            return
        conf = await probes.on_slurm_host(["scontrol", "show", "config"])
        if not conf.ok:
            self.lines([f"scontrol show config failed: {conf.error or 'no answer'}"], "bold red")
            return
        ctld = config_value(conf.text, "SlurmctldLogFile")
        await self.show_log("slurmctld", ctld, None, probes)
        if self.node:
            slurmd = config_value(conf.text, "SlurmdLogFile").replace("%n", self.node).replace("%h", self.node)
            await self.show_log(f"slurmd on {self.node}", slurmd, self.node, probes)

    async def show_log(self, label: str, path: str, node: str | None, probes: Any) -> None:
        self.lines([f"── {label}: {clean(path or '(no log file: it logs to syslog/journald)', 200)}"], "bold")
        if not path:
            return
        scan = JOB_SCAN_LINES if self.job and node is None else LOG_LINES
        got = await self.read_log(path, node, probes, scan)
        if isinstance(got, str):
            self.lines([f"cannot read it: {got}"], "bold red")
            return
        if self.job and node is None:
            mine = job_lines(got, self.job)
            self.lines([f"── job {self.job}: {len(mine)} of slurmctld's last {len(got)} lines name it"
                        if mine else f"── no line of slurmctld's last {len(got)} names job {self.job}"], "bold")
            self.lines(mine[-LOG_LINES:])
            self.lines([f"── slurmctld: its last {min(LOG_LINES, len(got))} lines"], "bold")
        self.lines(got[-LOG_LINES:])

    async def read_log(self, path: str, node: str | None, probes: Any, n: int) -> list[str] | str:
        """The last ``n`` lines of ``path`` (read here when it can be, else on the Slurm
        host or ``node``), or why they could not be read."""
        if node is None and not self.services.simulated and not self.services.config.general.host:
            try:
                return list(tail_lines(path, n))
            except JobLogError:
                pass  # not readable here: ask the Slurm host
        argv = ["tail", "-n", str(n), "--", path]
        try:
            out = (await probes.on_nodes([node], argv))[node] if node else await probes.on_slurm_host(argv)
        except CockpitError as exc:
            return str(exc)
        if not out.ok:
            return out.error or "no answer"
        return out.text.splitlines()
