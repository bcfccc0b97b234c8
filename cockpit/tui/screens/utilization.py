"""GPU utilisation over a window (``[``/``]``: 1, 7, 30 days): a plot of the
allocated share per period with the 70-80% band that well-scheduled clusters
reach and the 50% line below which renting beats owning, and the table per
partition and account (allocated, idle inside allocations, unallocated,
drained/down), each figure with where it came from (cockpit.core.utilization)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static
from textual_plotext import PlotextPlot

from cockpit.text import clean
from cockpit.tui.screens.acctwindow import AccountingWindowScreen, window_keys
from cockpit.tui.services import ClusterServices

BAND, LINE = (70.0, 80.0), 50.0


def _h(v) -> str:
    return "not measured" if v is None else f"{v:,.1f}"


def table_renderable(u) -> Table:
    t = Table("SCOPE", "NAME", "CAPACITY GPU-H", "ALLOCATED", "IDLE IN ALLOC", "DRAINED/DOWN", "UNALLOCATED", "UTIL",
              box=None, pad_edge=False)
    for r in u.rows:
        cap = r.capacity is not None
        t.add_row(Text(r.scope), Text(clean(r.name, 40)), Text(_h(r.capacity) if cap else "-"), Text(_h(r.allocated)),
                  Text(_h(r.idle_in_alloc)), Text(_h(r.drained) if cap else "-"), Text(_h(r.unallocated) if cap else "-"),
                  Text("-" if r.utilization is None else f"{r.utilization:.1f}%"))
    return t


def plot_points(u) -> tuple[list[float], list[float]]:
    """(hours from the window's start, utilisation %) per period with a capacity."""
    xs, ys = [], []
    for r in u.trend:
        if r.utilization is not None:
            xs.append((r.start - u.start) / 3600)
            ys.append(r.utilization)
    return xs, ys


class UtilizationScreen(AccountingWindowScreen):
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="util.back"), *window_keys("util")]
    DEFAULT_CSS = """
    UtilizationScreen #util-title { background: $panel; text-style: bold; height: 1; }
    UtilizationScreen PlotextPlot { height: 16; }
    """
    crumb = "utilization"
    title_id, status_id = "util-title", "util-verdict"
    windows = ("1d", "7d", "30d")

    def __init__(self, window: str = "7d", *, services: ClusterServices) -> None:
        super().__init__(window, services=services)

    def compose_body(self) -> ComposeResult:
        yield PlotextPlot(id="util-plot")
        yield Static("", id="util-table")

    @work(exclusive=True, group="utilization")
    async def load(self) -> None:
        from cockpit.core.utilization import utilization

        async def fetch(acct, since: int, now: float):
            snap = self.services.snapshot or await self.services.backend.snapshot()
            from cockpit.telemetry.promsource import job_utils_provider

            return await utilization(acct, snap, since, now, tracked=getattr(acct, "tracked_tres", ""),
                                     gpu_utils=job_utils_provider(self.services.config))

        answer = await self.ask(f" GPU utilization, last {self.window} ([ ]: 1/7/30 d)", fetch)
        if answer is not None:
            self.show(answer[0])

    def show(self, u) -> None:
        head = u.rows[0]
        pct = head.utilization
        text = Text(f"{head.name}: ", style="bold")
        text.append("-" if pct is None else f"{pct:.1f}% of the GPU-hours allocated")
        if pct is not None:
            text.append("  (" + _verdict(pct) + ")", style="green" if BAND[0] <= pct <= BAND[1] else "yellow" if pct >= LINE else "red")
        self.query_one("#util-verdict", Static).update(text)
        plot = self.query_one("#util-plot", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        xs, ys = plot_points(u)
        if xs:
            plt.plot(xs, ys, label="allocated %", marker="braille")
        plt.hline(BAND[0], "green")
        plt.hline(BAND[1], "green")
        plt.hline(LINE, "red")
        plt.ylim(0, 100)
        plt.xlabel(f"hours since the window's start (per {'day' if u.bucket_s >= 86400 else 'hour'}); "
                   "green: the 70-80% band, red: 50%")
        plot.refresh()
        sources = Text("\n".join(f"{k}: {v}" for k, v in u.sources.items()), style="dim")
        costs = Text("\n" + "; ".join(c.describe() for c in u.costs), style="dim")
        self.query_one("#util-table", Static).update(Group(table_renderable(u), Text(""), sources, costs))


def _verdict(pct: float) -> str:
    if pct < LINE:
        return "below 50%: renting beats owning"
    if pct < BAND[0]:
        return "under the 70-80% band"
    return "inside the 70-80% band" if pct <= BAND[1] else "above the band"
