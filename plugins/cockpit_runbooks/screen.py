"""The runbook screen (imported by the TUI only: it imports Textual).

``RunbookScreen(book, rc, mode="propose")`` runs a runbook in a worker and
shows the steps, a live evidence pane, the findings and each proposed action
with its exact argv. Start it from a job or node row ("why is this stuck?").
``x`` runs it again in act mode: each action then goes through the context's
gate, which confirms it (the TUI's dialog with the exact argv) and refuses it in
read-only mode (the refusal audited, before anything runs). Cluster strings are
shown as plain Text, never as markup.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Log, Static

from cockpit.plugins.api import ReadOnlyError

from .engine import StepOutcome, run_runbook

STATUS_STYLE = {"ran": "green", "skipped": "dim", "failed": "magenta", "proposed": "bold yellow",
                "done": "bold green", "dry-run": "cyan", "refused": "bold red", "action-failed": "bold red"}
SEVERITY_STYLE = {"CRIT": "bold white on red", "WARN": "bold black on yellow", "OK": "green", "UNKNOWN": "magenta"}


def steps_text(book: Any, outcomes: dict[str, StepOutcome]) -> Text:
    """One line per step: status and title (pending steps shown as such)."""
    text = Text()
    for s in book.steps:
        o = outcomes.get(s.id)
        status = o.status if o else "pending"
        text.append(f"{status:>13} ", style=STATUS_STYLE.get(status, ""))
        text.append(f"{s.title}\n")
    return text


def findings_text(outcomes: dict[str, StepOutcome]) -> Text:
    """Findings, then every action with its exact command."""
    text = Text()
    for o in outcomes.values():
        for f in o.findings:
            text.append(f" {f.severity.name} ", style=SEVERITY_STYLE.get(f.severity.name, ""))
            text.append(f" {f.title}\n")
            if f.fix:
                text.append(f"     fix: {f.fix}\n", style="italic")
    for o in outcomes.values():
        for argv in o.argv:
            text.append(f"[{o.status}] ", style=STATUS_STYLE.get(o.status, ""))
            text.append(f"$ {shlex.join(argv)}\n", style="bold")
            if o.why:
                text.append(f"     {o.why}\n", style="dim")
    return text


class RunbookScreen(Screen):
    BINDINGS = [Binding("escape", "app.pop_screen", "Back", id="runbook.back"),
                Binding("x", "act", "Do proposed actions", id="runbook.act")]
    DEFAULT_CSS = """
    #rb-left { width: 2fr; }
    #rb-steps { height: auto; border: round $accent; }
    #rb-findings { height: 1fr; border: round $accent; overflow-y: auto; }
    #rb-evidence { width: 3fr; border: round $accent; }
    """

    def __init__(self, book: Any, rc: Any, mode: str = "propose") -> None:
        super().__init__()
        self.book, self.rc, self.mode = book, rc, mode
        self.outcomes: dict[str, StepOutcome] = {}

    def compose(self) -> ComposeResult:
        yield Static(Text(f"Runbook {self.book.title} ({self.mode})", style="bold"), id="rb-title")
        with Horizontal():
            with Vertical(id="rb-left"):
                yield Static(steps_text(self.book, {}), id="rb-steps")
                yield Static(Text(""), id="rb-findings")
            yield Log(id="rb-evidence", highlight=False)
        yield Footer()

    def on_mount(self) -> None:
        self.rc.events = self._evidence  # the worker runs on the event loop: direct calls are safe
        self.run_worker(self._run(), name="runbook", exclusive=True)

    def _evidence(self, line: str) -> None:
        self.query_one("#rb-evidence", Log).write_line(line)

    def _step_done(self, outcome: StepOutcome) -> None:
        self.outcomes[outcome.id] = outcome
        self.query_one("#rb-steps", Static).update(steps_text(self.book, self.outcomes))
        self.query_one("#rb-findings", Static).update(findings_text(self.outcomes))

    async def _run(self) -> None:
        await run_runbook(self.book, self.rc, self.mode, on_step=self._step_done)

    def action_act(self) -> None:
        """Run again doing the proposed actions, each confirmed by the gate."""
        what = f"job {self.rc.job_id}" if self.rc.job_id else f"node {self.rc.node}"
        try:
            self.rc.ctx.actions.refuse_if_read_only(f"runbooks.{self.book.name}", (what,))
        except ReadOnlyError as exc:
            self.notify(str(exc), severity="error", timeout=10)
            return
        if self.mode == "act":
            self.notify("this run already does its actions (each one asked for confirmation)")
            return
        # A fresh context (the same inputs, no facts or findings of this run) for the acting run.
        rc = replace(self.rc, job=None, facts={}, findings=[], events=None)
        self.app.switch_screen(type(self)(self.book, rc, "act"))
