"""TUI screen of the nccl plugin: pick nodes, engine and mode, watch progress, read the
verdict, the results table, the busbw-vs-size plot and (pair mode) the suspect node.

Imported only by the TUI (it imports Textual). ``NcclScreen(context, nodes="")``
opens on ``nodes`` (the TUI passes the selected nodes). It runs the same NcclCheck
as the headless command, in a named exclusive worker: each submission goes through
the context's gate (the TUI's dialog with the argv and the script; refused and
audited in read-only mode). ``x`` runs the test (``r`` refreshes everywhere else,
so it does not run anything here). The form is one line that fits in 80 columns:
the nodes field takes what the selectors leave. Cluster strings are shown as Text,
never as markup.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, DataTable, Footer, Header, Input, Log, Select, Static
from textual_plotext import PlotextPlot

from cockpit.plugins.api import CheckContext, CheckResult, CockpitError

from cockpit_nccl.check import NcclCheck
from cockpit_nccl.run import ENGINES, MODES


class NcclScreen(Screen):
    """Run and judge NCCL bandwidth tests."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back", id="nccl.back"),
                Binding("x", "start", "Run test", id="nccl.run")]
    DEFAULT_CSS = """
    NcclScreen #nccl-form { height: 3; }
    NcclScreen #nodes { width: 1fr; }
    NcclScreen #engine { width: 18; }
    NcclScreen #mode { width: 12; }
    NcclScreen #run { width: 11; min-width: 11; }
    NcclScreen #verdict { height: auto; max-height: 6; }
    NcclScreen #nccl-body { height: 1fr; }
    NcclScreen #nccl-left { width: 3fr; }
    NcclScreen #results { height: auto; max-height: 50%; }
    NcclScreen #progress { height: 1fr; min-height: 3; }
    NcclScreen #plot { width: 2fr; }
    """
    crumb = "NCCL test"

    def __init__(self, context: CheckContext, nodes: str = "", **kw) -> None:
        super().__init__(**kw)
        self.context = context
        self.initial_nodes = nodes
        self.check = NcclCheck()

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Horizontal(id="nccl-form"):
            yield Input(self.initial_nodes, placeholder="nodes, e.g. node[01-04]", id="nodes")
            yield Select([(e, e) for e in ENGINES], value=ENGINES[0], id="engine", allow_blank=False)
            yield Select([(m, m) for m in MODES], value="all", id="mode", allow_blank=False)
            yield Button("Run (x)", id="run", variant="primary")
        yield Static(Text("pick the nodes, the engine and the mode, then x (or Run)", style="dim"), id="verdict")
        with Horizontal(id="nccl-body"):
            with Vertical(id="nccl-left"):
                yield DataTable(id="results", cursor_type="row")
                yield Log(id="progress", max_lines=500)
            yield PlotextPlot(id="plot")
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        table = self.query_one("#results", DataTable)
        table.add_columns("nodes", "job", "status", "busbw GB/s", "size", "ranks")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "run":
            self.action_start()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_start()  # Enter in the nodes field: x would be typed into it

    def _args(self) -> argparse.Namespace:
        parser = argparse.ArgumentParser()
        self.check.add_arguments(parser)
        argv = ["--nodes", self.query_one("#nodes", Input).value.strip(),
                "--engine", str(self.query_one("#engine", Select).value),
                "--mode", str(self.query_one("#mode", Select).value)]
        return parser.parse_args(argv)

    def action_start(self) -> None:
        if not self.query_one("#nodes", Input).value.strip():
            self.notify("give the nodes to test, e.g. node[01-04]", severity="warning")
            return
        self.query_one("#progress", Log).clear()
        self._set_verdict(Text("running…"))
        self.run_check()

    @work(exclusive=True, name="nccl-check", group="nccl")
    async def run_check(self) -> None:
        log = self.query_one("#progress", Log)
        ctx = replace(self.context, progress=lambda m: log.write_line(str(m)))
        try:
            result = await self.check.run(ctx, self._args())
        except (CockpitError, SystemExit) as exc:
            self._set_verdict(Text(f"error: {exc}", style="bold red"))
            return
        self.show_result(result)

    def _set_verdict(self, text: Text) -> None:
        self.query_one("#verdict", Static).update(text)

    def show_result(self, result: CheckResult) -> None:
        """Fill the verdict line, the table and the plot from a CheckResult."""
        style = {"OK": "green", "WARN": "yellow", "CRIT": "bold red"}.get(result.severity.name, "")
        line = Text(f"{result.severity.name}: ", style=style) + Text(result.summary)
        suspect = result.data.get("suspect") or {}
        if suspect.get("nodes"):
            line += Text("\nsuspect: ", style="bold") + Text(", ".join(suspect["nodes"]))
            for ev in suspect.get("evidence", [])[:3]:
                line += Text("\n  " + ev)
        self._set_verdict(line)
        table = self.query_one("#results", DataTable)
        table.clear()
        plot = self.query_one("#plot", PlotextPlot).plt
        plot.clear_data()
        # plotext's log scale fails on an empty plot (a job that wrote no output).
        plotted = any(any(v is not None for r in run["rows"] for v in r[1:3]) for run in result.data.get("runs", []))
        plot.xscale("log" if plotted else "linear")
        plot.xlabel("message size (B)")
        plot.ylabel("busbw GB/s")
        for i, run in enumerate(result.data.get("runs", [])):
            bw = "-" if run["busbw_gbps"] is None else f"{run['busbw_gbps']:.2f}"
            table.add_row(Text(run["nodes"] or "log"), str(run["job_id"] or ""), run["status"], bw,
                          str(run["size_bytes"] or ""), str(run["nranks"] or "?"), key=f"run-{i}")
            pts = [(r[0], max(v for v in r[1:3] if v is not None)) for r in run["rows"]
                   if any(v is not None for v in r[1:3])]
            if pts:
                plot.plot([p[0] for p in pts], [p[1] for p in pts], label=run["nodes"] or "log")
        self.query_one("#plot", PlotextPlot).refresh()
