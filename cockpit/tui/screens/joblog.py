"""Follow a job's stdout or stderr (key ``f``): the file here, or on the job's batch
host through the backend's probe runner (SSH on a real cluster, the simulated
node in the demo). The title says where the lines come from. Lines are cluster
data: sanitized and shown as Text, never markup."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, RichLog, Static

from cockpit.core.joblog import JobLogError, JobOutput
from cockpit.errors import CockpitError
from cockpit.models import Job
from cockpit.text import clean
from cockpit.tui.services import host_of
from cockpit.tui.widgets.crumbs import Breadcrumb

# (job, stderr) -> its output (or an awaitable of it); raises JobLogError
OpenOutput = Callable[[Job, bool], "JobOutput | Awaitable[JobOutput]"]


class JobLogScreen(Screen):
    """Follows a job's stdout or stderr until closed; ``e`` switches between them."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="joblog.back"),
                Binding("e", "toggle_stream", "stdout/stderr", id="joblog.stream"),
                Binding("y", "copy_path", "Copy path", id="joblog.copy")]

    def __init__(self, job: Job, open_output: OpenOutput, via: str = "over SSH", stderr: bool = False) -> None:
        """``via``: how a node's file is read, for the title ("over SSH")."""
        super().__init__()
        self.job, self.open_output, self.via, self.stderr = job, open_output, via, stderr
        self.source = ""  # "/path" or "node01:/path" once chosen
        self.following = False  # the last lines are shown and it waits for new ones

    @property
    def crumb(self) -> str:
        return "stderr" if self.stderr else "stdout"

    def compose(self) -> ComposeResult:
        yield Breadcrumb()
        yield Static("", id="log-title")
        yield RichLog(max_lines=5000, wrap=False, markup=False, id="log")
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self._start()

    def action_toggle_stream(self) -> None:
        self.stderr = not self.stderr
        self._start()
        host_of(self).update_crumbs()

    def action_copy_path(self) -> None:
        if self.source:
            host_of(self).copy_value(self.source, "the output path")

    def _start(self) -> None:
        self.following = False
        self.query_one(RichLog).clear()
        self.query_one("#log-title", Static).update(Text(f" job {self.job.job_id}: finding its output…"))
        self._follow()

    @work(exclusive=True, group="joblog")
    async def _follow(self) -> None:
        log = self.query_one(RichLog)
        try:
            out = self.open_output(self.job, self.stderr)
            if inspect.isawaitable(out):
                out = await out
        except CockpitError as exc:  # JobLogError, or scontrol failing while the path is resolved
            self.query_one("#log-title", Static).update(Text(" " + clean(exc, 300)))
            return
        label = "stderr" if self.stderr else "stdout"
        self.source = out.source
        how = f" {clean(self.via, 60)}" if out.node and self.via else ""
        self.query_one("#log-title", Static).update(
            Text(f" job {self.job.job_id} {label}: {clean(out.source, 300)}{how} (following)"))
        try:
            try:
                for line in await out.tail(200, partial=False):
                    log.write(Text(line))
            except JobLogError as exc:
                log.write(Text(f"{clean(exc)} (waiting for it to appear)"))
            self.following = True
            async for line in out.follow(interval=1.0):
                log.write(Text(line))
        except JobLogError as exc:
            log.write(Text(f"stopped: {clean(exc)}"))
        finally:  # also on cancel: toggling the stream or leaving the screen closes what it opened
            await out.close()
