"""TUI screens of the pre-flight plugin: storage, burn-in and fabric.

Imported only by the TUI (it imports Textual). Each screen takes the plugin's
CheckContext (and optionally the nodes to start from), runs the same check as
the headless command in a named exclusive worker (so a launch is confirmed by
the gate's dialog and refused in read-only mode), and shows a progress bar, the
verdict, one row per node (or GPU) and a plot: bandwidth bars per node for
storage, temperature and power over the burn-in, link rate per node for the
fabric. Cluster strings are shown as Text, never as markup.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import replace

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, DataTable, Footer, Header, Input, Log, ProgressBar, Static
from textual_plotext import PlotextPlot

from cockpit.plugins.api import (
    CheckContext, CheckResult, CockpitError, Declined, ReadOnlyError, Severity, UsageError, collapse,
)

from cockpit_preflight.burnin import BurninCheck
from cockpit_preflight.fabric import FabricCheck
from cockpit_preflight.storage import StorageCheck

_STYLE = {"OK": "green", "WARN": "yellow", "CRIT": "bold red", "UNKNOWN": "magenta"}
# Progress steps of a launched check: submitted, pending, running, ended, judged.
_STEPS = 5


class _Parser(argparse.ArgumentParser):
    """Flags from the form: a bad value is a UsageError on the screen, never an exit."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message}")


def node_status(result: CheckResult, node: str) -> str:
    """The worst severity among the findings that name ``node`` first."""
    sevs = [f.severity for f in result.findings if f.title.split(":")[0].split(" ")[0] == node]
    order = [Severity.OK, Severity.WARN, Severity.UNKNOWN, Severity.CRIT]
    return max(sevs, key=order.index).name if sevs else "OK"


class PreflightScreen(Screen):
    """The shared layout: a form, a progress bar, the verdict, a table, a log and a plot."""

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    DEFAULT_CSS = """
    PreflightScreen #pf-form { height: auto; }
    PreflightScreen.-narrow #pf-form { layout: grid; grid-size: 3; grid-rows: 3; grid-columns: 1fr 1fr 1fr; }
    PreflightScreen.-narrow #pf-form Button { width: 1fr; }
    PreflightScreen #pf-form Input { width: 1fr; }
    PreflightScreen #pf-form Button { width: auto; min-width: 8; }
    PreflightScreen #pf-verdict { height: auto; max-height: 9; }
    PreflightScreen #pf-plot { width: 45%; }
    PreflightScreen #pf-messages { height: 8; }
    """
    # x runs, as on the NCCL and runbook screens (r refreshes everywhere else)
    BINDINGS = [("escape", "app.pop_screen", "Back"), ("x", "start", "Run check")]
    CHECK: type = StorageCheck
    FIELDS: tuple[tuple[str, str, str], ...] = ()  # (flag, placeholder, default)
    COLUMNS: tuple[str, ...] = ()

    def __init__(self, context: CheckContext, nodes: str | tuple[str, ...] | list[str] | None = None, **kw) -> None:
        super().__init__(**kw)
        self.context = context
        self.check = self.CHECK()
        self.initial_nodes = nodes if isinstance(nodes, str) else collapse(tuple(nodes or ()))
        self.result: CheckResult | None = None

    @property
    def crumb(self) -> str:
        return f"pre-flight {self.check.name}"

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Horizontal(id="pf-form"):
            for flag, hint, default in self.FIELDS:
                value = self.initial_nodes if flag == "--nodes" and self.initial_nodes else default
                yield Input(value=value, placeholder=hint, id=f"pf-{flag.strip('-')}")
            yield Button("Run", id="pf-run", variant="primary")
            yield from self.extra_buttons()
        yield ProgressBar(total=_STEPS, show_eta=False, id="pf-progress")
        yield Static("", id="pf-verdict")
        with Horizontal():
            with Vertical():
                yield DataTable(id="pf-results", cursor_type="row")
                yield Log(id="pf-messages", max_lines=500)
            yield PlotextPlot(id="pf-plot")
        yield Footer(show_command_palette=False)

    def extra_buttons(self) -> ComposeResult:
        return iter(())

    def on_mount(self) -> None:
        self.query_one("#pf-results", DataTable).add_columns(*self.COLUMNS)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "pf-run":
            self.action_start()

    def on_input_submitted(self, event) -> None:
        event.stop()
        self.action_start()  # Enter in a field: x would be typed into it

    def argv(self) -> list[str]:
        """The check's flags from the form (empty fields left out; the log field takes
        several ``[NODE=]PATH``, whitespace-separated)."""
        out: list[str] = []
        for flag, _hint, _default in self.FIELDS:
            value = self.query_one(f"#pf-{flag.strip('-')}", Input).value.strip()
            if not value:
                continue
            for word in shlex.split(value) if flag == "--log" else [value]:
                out += [flag, word]
        return out

    def parse(self) -> argparse.Namespace:
        parser = _Parser(prog=f"cockpit check {self.check.name}", add_help=False)
        self.check.add_arguments(parser)
        return parser.parse_args(self.argv())

    def action_start(self) -> None:
        self.query_one("#pf-messages", Log).clear()
        self.query_one("#pf-progress", ProgressBar).update(progress=0)
        self.set_verdict(Text("running..."))
        self.run_check()

    def progress(self, message: str) -> None:
        self.query_one("#pf-messages", Log).write_line(str(message))
        bar = self.query_one("#pf-progress", ProgressBar)
        if (bar.progress or 0) < _STEPS - 1:
            bar.advance(1)

    @work(exclusive=True, name="preflight-check", group="preflight")
    async def run_check(self) -> None:
        ctx = replace(self.context, progress=self.progress)
        try:
            result = await self.check.run(ctx, self.parse())
        except CockpitError as exc:
            self.set_verdict(Text(f"error: {exc}", style="bold red"))
            return
        self.query_one("#pf-progress", ProgressBar).update(progress=_STEPS)
        self.show_result(result)

    def set_verdict(self, text: Text) -> None:
        self.query_one("#pf-verdict", Static).update(text)

    def show_result(self, result: CheckResult) -> None:
        """The verdict, the findings worth a look, one table row per entity and the plot."""
        self.result = result
        line = Text(f"{result.severity.name}: ", style=_STYLE.get(result.severity.name, "")) + Text(result.summary)
        for f in [f for f in result.findings if f.severity != Severity.OK][:6]:
            line += Text(f"\n  [{f.severity.name}] ", style=_STYLE.get(f.severity.name, "")) + Text(f.title)
        self.set_verdict(line)
        table = self.query_one("#pf-results", DataTable)
        table.clear()
        for key, row in self.rows(result):
            table.add_row(*[c if isinstance(c, Text) else Text(str(c)) for c in row], key=key)
        widget = self.query_one("#pf-plot", PlotextPlot)
        widget.plt.clear_data()
        widget.plt.clear_figure()
        self.plot(widget.plt, result)
        widget.refresh()

    def rows(self, result: CheckResult):
        return []

    def plot(self, plt, result: CheckResult) -> None:
        return None


def _gbps(value) -> str:
    return "-" if value is None else f"{value / 1e9:.3g}"


class StorageScreen(PreflightScreen):
    """Local scratch and shared filesystem per node; bars of the sequential figures."""

    CHECK = StorageCheck
    FIELDS = (("--nodes", "nodes, e.g. node[01-04]", ""), ("--local", "local scratch path", ""),
              ("--shared", "shared path", ""), ("--params", "model size, e.g. 70B", ""),
              ("--log", "or judge kept output files", ""))
    COLUMNS = ("node", "path", "filesystem", "seq read GB/s", "seq write GB/s", "randread kIOPS", "creates/s",
               "status")

    def rows(self, result: CheckResult):
        for node, nd in result.data.get("nodes", {}).items():
            for kind, p in nd.get("paths", {}).items():
                iops = p.get("randread_iops")
                creates = (p.get("meta_ops_per_s") or {}).get("create")
                yield f"{node}:{kind}", (Text(node), kind, Text(f"{p.get('fstype') or '?'} {p.get('source') or ''}"),
                                         _gbps(p.get("seqread_bytes_per_s")), _gbps(p.get("seqwrite_bytes_per_s")),
                                         "-" if iops is None else f"{iops / 1e3:.3g}",
                                         "-" if creates is None else f"{creates:.0f}", node_status(result, node))

    def plot(self, plt, result: CheckResult) -> None:
        nodes = result.data.get("nodes", {})
        names = list(nodes)
        series = []
        for kind, test, label in (("local", "seqread", "local read"), ("shared", "seqwrite", "shared write")):
            vals = [((nodes[n]["paths"].get(kind) or {}).get(f"{test}_bytes_per_s") or 0) / 1e9 for n in names]
            if any(vals):
                series.append((label, vals))
        if names and series:
            plt.multiple_bar(names, [v for _, v in series], labels=[lab for lab, _ in series])
        plt.title("sequential GB/s per node")


class BurninScreen(PreflightScreen):
    """Per GPU: temperature, power, SM clock, throttle reasons; temperature and power over time."""

    CHECK = BurninCheck
    FIELDS = (("--nodes", "nodes, e.g. node[01-04]", ""), ("--duration", "seconds of load", "300"),
              ("--log", "or judge kept output files", ""))
    COLUMNS = ("node", "gpu", "temp C", "power W", "SM MHz", "throttle", "status")

    def extra_buttons(self) -> ComposeResult:
        yield Button("Drain failing nodes", id="pf-drain", variant="error", disabled=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "pf-drain":
            self.drain_failing()
        else:
            super().on_button_pressed(event)

    def show_result(self, result: CheckResult) -> None:
        super().show_result(result)
        self.query_one("#pf-drain", Button).disabled = not result.data.get("proposed_drains")

    @work(exclusive=True, name="preflight-drain", group="preflight-drain")
    async def drain_failing(self) -> None:
        """Each proposed drain through the gate: the dialog asks, read-only refuses."""
        log = self.query_one("#pf-messages", Log)
        for proposal in (self.result.data.get("proposed_drains") or []) if self.result else []:
            node, reason = proposal["targets"][0], proposal["params"].get("reason", "")
            try:
                outcome = await self.context.actions.execute(self.context.actions.plan("drain", [node], reason=reason))
                log.write_line(f"drain {node}: {'done' if outcome.ok else 'failed'}")
            except (ReadOnlyError, Declined, CockpitError) as exc:
                log.write_line(f"drain {node}: not done: {exc}")

    def rows(self, result: CheckResult):
        for node, nd in result.data.get("nodes", {}).items():
            samples = [s for s in nd.get("samples", []) if s["phase"] == "load"] or nd.get("samples", [])
            status = node_status(result, node)
            for g in (samples[-1]["gpus"] if samples else []):
                reasons = ",".join(r for r in (g.get("reasons") or []) if r != "gpu_idle") or "-"
                yield f"{node}:{g['index']}", (Text(node), g["index"], g.get("temp_c") or "-", g.get("power_w") or "-",
                                               g.get("sm_mhz") or "-", Text(reasons), status)
            if not samples:
                yield f"{node}:-", (Text(node), "-", "-", "-", "-", "-", status)

    def plot(self, plt, result: CheckResult) -> None:
        for node, nd in result.data.get("nodes", {}).items():
            timed = [s for s in nd.get("samples", []) if s.get("t") is not None]
            if not timed:
                continue
            t0 = timed[0]["t"]
            for idx in sorted({g["index"] for s in timed for g in s["gpus"]}):
                for field, unit in (("temp_c", "C"), ("power_w", "W")):
                    pts = [(s["t"] - t0, g[field]) for s in timed for g in s["gpus"]
                           if g["index"] == idx and g.get(field) is not None]
                    if pts:
                        plt.plot([p[0] for p in pts], [p[1] for p in pts], label=f"{node} gpu{idx} {unit}")
        plt.xlabel("seconds into the burn-in")
        plt.title("temperature (C) and power (W)")


class FabricScreen(PreflightScreen):
    """Per node: the link kind, the slowest rail's rate, how many rails; a bar per node."""

    CHECK = FabricCheck
    FIELDS = (("--partition", "partition", ""), ("--gpus", "size for N GPUs", ""),
              ("--ib-root", "HCA tree ({node} = node)", ""), ("--log", "or judge recorded trees/ibstat", ""))
    COLUMNS = ("node", "link", "Gb/s", "rails", "ports", "status")

    def rows(self, result: CheckResult):
        for node, nd in result.data.get("nodes", {}).items():
            rate = nd.get("rate_gbps")
            yield node, (Text(node), nd.get("link") or "-", "-" if rate is None else f"{rate:g}", nd.get("rails", 0),
                         len(nd.get("ports", [])), node_status(result, node))

    def plot(self, plt, result: CheckResult) -> None:
        nodes = {n: nd["rate_gbps"] for n, nd in result.data.get("nodes", {}).items() if nd.get("rate_gbps")}
        if nodes:
            plt.bar(list(nodes), list(nodes.values()))
        for g in result.data.get("groups", {}).values():
            if g.get("need_gbps"):
                plt.hline(g["need_gbps"][0], "red")
                plt.hline(g["need_gbps"][1], "green")
                break
        plt.title("slowest link per node, Gb/s (red: minimum, green: recommended)")
