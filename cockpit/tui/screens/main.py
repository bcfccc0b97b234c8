"""The main screen: header, stale banner, the five views, filter and command lines."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Input, Static

from cockpit.text import clean
from cockpit.tui.screens.detail import JobDetailScreen, NodeDetailScreen
from cockpit.tui.services import host_of
from cockpit.tui.widgets.header import CockpitHeader, StaleBanner
from cockpit.tui.widgets.pulse import PulseView
from cockpit.tui.widgets.views import TABLE_VIEWS, TableView
from cockpit.tui.widgets.vtable import VTable

VIEW_ORDER = ("pulse", "nodes", "gpus", "partitions", "jobs")
VIEW_ALIASES = {"pulse": "pulse", "overview": "pulse", "p": "pulse", "nodes": "nodes", "no": "nodes", "node": "nodes",
                "gpus": "gpus", "gpu": "gpus", "g": "gpus", "partitions": "partitions", "part": "partitions",
                "partition": "partitions", "pa": "partitions", "jobs": "jobs", "job": "jobs", "j": "jobs", "squeue": "jobs"}


class MainScreen(Screen):
    class ViewShown(Message):
        """A view was switched to (the App polls GPU telemetry at once for the GPU view)."""

        def __init__(self, kind: str) -> None:
            super().__init__()
            self.kind = kind

    # The footer shows what fits in 80 columns; ``?`` lists every key.
    BINDINGS = [
        Binding("1", "view('pulse')", "Views", key_display="1-5", id="view.pulse"),
        Binding("2", "view('nodes')", "Nodes", show=False, id="view.nodes"),
        Binding("3", "view('gpus')", "GPUs", show=False, id="view.gpus"),
        Binding("4", "view('partitions')", "Parts", show=False, id="view.partitions"),
        Binding("5", "view('jobs')", "Jobs", show=False, id="view.jobs"),
        # priority: run on arrival, before the keys typed after it are routed (see _open).
        Binding("slash", "filter", "Filter", priority=True, id="main.filter"),
        Binding("colon", "command", "Cmd", show=False, priority=True, id="main.command"),
        Binding("p", "app.toggle_pause", "Pause", show=False, id="poll.pause"),
        Binding("r", "app.refresh_now", "Refresh", show=False, id="poll.refresh"),
        Binding("question_mark", "app.show_keys", "Keys", id="main.keys"),
        Binding("exclamation_mark", "problems", "Problems", show=False, id="main.problems"),
        Binding("escape", "cancel", "Clear", show=False, id="main.clear"),
        Binding("q", "app.request_quit", "Quit", id="main.quit"),
    ]
    DEFAULT_CSS = """
    MainScreen Input.line { height: 1; border: none; padding: 0 1; display: none; background: $boost; }
    MainScreen Input.line.-open { display: block; }
    MainScreen #message { height: auto; max-height: 2; color: $warning; display: none; }
    MainScreen #message.-shown { display: block; }
    MainScreen ContentSwitcher { height: 1fr; }
    """

    def __init__(self, clock, cell_width: int = 40, *, silent_after: float = 600.0, watching: str = "") -> None:
        """``watching``: why the output watch is off ('' when on), for the Pulse."""
        super().__init__()
        self.clock = clock
        self.header = CockpitHeader(id="header")
        self.banner = StaleBanner(id="stale-banner")
        self.pulse = PulseView(clock, cell_width, silent_after=silent_after, watching=watching)
        self.views: dict[str, Any] = {"pulse": self.pulse}
        for cls in TABLE_VIEWS:
            self.views[cls.kind] = cls(clock, cell_width)
        self.current = "pulse"
        self.drilled: str | None = None  # the partition whose Enter opened Nodes (Esc goes back to it)

    def compose(self) -> ComposeResult:
        yield self.header
        yield self.banner
        with ContentSwitcher(initial="view-pulse", id="switcher"):
            for kind in VIEW_ORDER:
                yield self.views[kind]
        yield Static("", id="message")
        yield Input(placeholder="filter: words, state:drain user:alice gpus>0 (enter applies, esc clears)", id="filter", classes="line")
        from cockpit.tui.commands import completions
        from cockpit.tui.widgets.cmdline import CommandLine

        yield CommandLine(lambda text: completions(self.app, text), self.say, id="command", classes="line",
                          placeholder=":nodes :jobs :job ID :node NAME :history :audit :q  (Tab completes)")
        yield Footer(show_command_palette=False)

    # -- data -----------------------------------------------------------
    def update_snapshot(self, snap) -> None:
        for kind, view in self.views.items():
            view.set_snapshot(snap, visible=(kind == self.current))
        self.update_header()

    def update_telemetry(self, telemetry) -> None:
        self.views["gpus"].set_telemetry(telemetry, visible=self.current == "gpus")
        self.pulse.set_inputs(telemetry=telemetry, visible=self.current == "pulse")

    def update_outputs(self, mtimes: dict[int, float]) -> None:
        """When the watched jobs' output last changed (the Pulse's suspects, LAST OUT)."""
        self.pulse.set_inputs(outputs=mtimes, visible=self.current == "pulse")

    def update_controller(self, line: str | None) -> None:
        """slurmctld's health line on the Pulse (None: healthy, or not read)."""
        self.pulse.set_controller(line)

    def on_pulse_view_updated(self, message: PulseView.Updated) -> None:
        self.views["jobs"].set_extras(self.pulse.extras, visible=self.current == "jobs")
        watch = host_of(self).output_watch
        if watch is not None and self.pulse.candidates is not None:
            watch.watch(self.pulse.candidates)

    def update_header(self) -> None:
        app = self.app
        fleet = app.fleet
        name = fleet.current.name if fleet.several else ""
        self.header.show(app.snapshot, app.poll_status, app.read_only, self.crumb_title(), name, fleet.stale_others())
        self.banner.show(app.poll_status, name)

    # -- views ----------------------------------------------------------
    def active_view(self):
        return self.views[self.current]

    def active_table(self) -> VTable | None:
        """The table actions use (its selected_keys()/marked_keys()); on the Pulse, its
        focused table (suspect jobs or drained nodes), None while both are empty."""
        return getattr(self.active_view(), "table", None)

    def crumb_title(self) -> str:
        """The view's title, after the partition it was opened from (``Partitions › gpu › Nodes``)."""
        title = self.views[self.current].title
        if self.drilled is not None and self.current == "nodes":
            return f"{self.views['partitions'].title} › {clean(self.drilled, 40)} › {title}"
        return title

    def action_view(self, kind: str) -> None:
        self.drilled = None  # a view chosen is no longer one drilled into
        kind = VIEW_ALIASES.get(kind, kind)
        if kind not in self.views:
            self.say(f"unknown view {kind!r}: try {', '.join(VIEW_ORDER)}")
            return
        self.current = kind
        self.query_one(ContentSwitcher).current = f"view-{kind}"
        view = self.views[kind]
        view.show_if_dirty()
        table = self.active_table()
        self.set_focus(table or view)  # now: a pending focus() would undo _open's
        self.query_one("#filter", Input).value = getattr(view, "query_text", "")
        self.update_header()
        self.post_message(self.ViewShown(kind))

    def action_problems(self) -> None:
        """What the last fetch could not read (the header counts it)."""
        from cockpit.tui.screens.problems import ProblemsScreen

        snap = self.app.snapshot
        self.app.push_screen(ProblemsScreen(snap.errors if snap is not None else ()))

    def say(self, text: str) -> None:
        msg = self.query_one("#message", Static)
        msg.update(Text(text))
        msg.set_class(bool(text), "-shown")

    # -- filter and command line ---------------------------------------
    def _open(self, which: str) -> None:
        for name in ("filter", "command"):
            self.query_one(f"#{name}", Input).set_class(name == which, "-open")
        line = self.query_one(f"#{which}", Input)
        if which == "command":
            line.value = ""
        # Focus now, not via focus() (a call_later): keys typed right after / or : (a fast typist,
        # a batched SSH link) would otherwise reach the table first, where p pauses and q quits.
        self.set_focus(line)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # / and : are priority bindings; while a line has focus they are just characters.
        return not (action in ("filter", "command") and isinstance(self.focused, Input))

    def action_filter(self) -> None:
        if self.current == "pulse":
            self.action_view("jobs")
        self._open("filter")

    def action_command(self) -> None:
        self._open("command")

    def _close_lines(self) -> None:
        for name in ("filter", "command"):
            self.query_one(f"#{name}", Input).remove_class("-open")
        table = self.active_table()
        (table or self.active_view()).focus()

    def action_cancel(self) -> None:
        if self.drilled is not None and self.current == "nodes":  # back to the partition Enter came from
            came_from = self.drilled
            self.views["nodes"].set_filter("")
            self.action_view("partitions")
            self.views["partitions"].table.select_key(came_from)
            self.say("")
            return
        view = self.active_view()
        if isinstance(view, TableView) and view.query_text:
            view.set_filter("")
            self.query_one("#filter", Input).value = ""
        self.say("")
        self._close_lines()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "filter":
            err = self.active_view().set_filter(event.value.strip())
            self.say(err)
            if not err:
                self._close_lines()
        else:
            self._close_lines()
            self.run_command(event.value.strip().lstrip(":"))

    def run_command(self, text: str) -> None:
        """A ``:`` command (cockpit.tui.commands: ``nodes``, ``job 123``, ``history``, ``q`` ...)."""
        from cockpit.tui.commands import run_colon

        self.say("")
        err = run_colon(self.app, text)  # a view's filter may have said something: only an error replaces it
        if err:
            self.say(err)

    def open_job(self, ident: str) -> None:
        try:
            self.app.push_screen(JobDetailScreen(int(ident.split("_")[0].split("+")[0]), services=self.app.services))
        except ValueError:
            self.say(f"not a job id: {ident!r}")

    def on_vtable_row_activated(self, event: VTable.RowActivated) -> None:
        kind = event.table.target_kind
        if kind == "job":
            self.app.push_screen(JobDetailScreen(event.key, services=self.app.services))
        elif kind == "node":
            node = str(event.key).rsplit(":", 1)[0] if self.current == "gpus" else event.key
            self.app.push_screen(NodeDetailScreen(node, services=self.app.services))
        elif self.current == "partitions":
            self.action_view("nodes")
            self.drilled = str(event.key)
            self.say(self.views["nodes"].set_filter(f"partition:{event.key}"))
            self.update_header()
            self.post_message(self.ViewShown("nodes"))  # the breadcrumb names the partition
