"""The runbook screen (imported by the TUI only: it imports Textual).

``RunbookScreen(book, rc, mode="propose")`` runs a runbook in a worker and
shows the steps (one line each), the findings (the worst first, each with its
detail and evidence: the straggler's stack, a probe's real cause), each
proposed action with its exact argv, and the live evidence (wrapped, never
cut). Below 120 columns the panes stack, findings in the middle, so they stay
visible at 80x24. ``x`` runs it again in act mode: each action then goes
through the context's gate, which confirms it (the TUI's dialog with the exact
argv) and refuses it in read-only mode (the refusal audited, before anything
runs). When a run ends the screen posts :class:`RunbookScreen.Finished` with
the run's facts, and :class:`RunbookScreen.Facts` after each step (the App
remembers the straggler's node). Cluster strings are
shown as plain Text, never as markup.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, RichLog, Static

from cockpit.plugins.api import FACTS_NAMESPACE, ReadOnlyError, ScreenOffers, sanitize

from .engine import StepOutcome, run_runbook

STATUS_STYLE = {"ran": "green", "skipped": "dim", "failed": "magenta", "proposed": "bold yellow",
                "done": "bold green", "dry-run": "cyan", "refused": "bold red", "action-failed": "bold red",
                "declined": "yellow"}
SEVERITY_STYLE = {"CRIT": "bold white on red", "WARN": "bold black on yellow", "OK": "green", "UNKNOWN": "magenta"}
SEVERITY_ORDER = {"CRIT": 0, "WARN": 1, "UNKNOWN": 2, "OK": 3}
TITLE_HEAD, TITLE_TAIL = 160, 80  # a longer finding title keeps its start and its end: the cause is at the end
DETAIL_LINES = 3  # evidence lines shown under a finding (the evidence pane has them all)


def shorten(text: str, head: int = TITLE_HEAD, tail: int = TITLE_TAIL) -> str:
    """``text`` with its middle cut out (and an ellipsis put there) when it is longer than head + tail."""
    text = sanitize(text)
    return text if len(text) <= head + tail + 1 else text[:head] + " … " + text[-tail:]


STATUS_LABEL = {"action-failed": "act failed"}  # the status column is 10 wide: never cut a word
STATUS_WIDTH = 10


def steps_text(book: Any, outcomes: dict[str, StepOutcome], current: str = "") -> Table:
    """One line per step: status and title (cut with an ellipsis; pending steps shown as such).
    ``current``: the step running now, highlighted (its action may be asking)."""
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(no_wrap=True, width=STATUS_WIDTH, justify="right")
    table.add_column(no_wrap=True, overflow="ellipsis", ratio=1)
    for s in book.steps:
        o = outcomes.get(s.id)
        status = "▶ now" if s.id == current else o.status if o else "pending"
        style = "bold reverse" if s.id == current else ""
        table.add_row(Text(STATUS_LABEL.get(status, status), style=STATUS_STYLE.get(status, "") or style),
                      Text(sanitize(s.title), style=style))
    return table


def result_text(book: Any, outcomes: dict[str, StepOutcome], mode: str) -> Text:
    """What the run came to, in one or two lines: the verdict, then each action step's
    status and target (after ``x``: what was done, declined or refused)."""
    from cockpit.plugins.api import verdict

    found = [f for o in outcomes.values() for f in o.findings]
    sev = verdict(found).name
    text = Text(" Result: ", style="bold")
    text.append(f" {sev} ", style=SEVERITY_STYLE.get(sev, ""))
    acts = [(s, outcomes[s.id]) for s in book.steps if s.action and s.id in outcomes
            and outcomes[s.id].status not in ("skipped", "n/a")]
    if not acts:
        return text if mode == "validate" else text.append("  no action to take")
    for step, o in acts:
        label = STATUS_LABEL.get(o.status, o.status)
        what = " ".join(o.argv[0][1:3]) if o.argv else step.action
        text.append(f"  {step.id}: ", style="bold")
        text.append(label, style=STATUS_STYLE.get(o.status, ""))
        text.append(f" ({sanitize(what)})")
    if mode == "propose":
        text.append("  - x does them, each confirmed", style="dim")
    return text


def ordered_findings(outcomes: dict[str, StepOutcome]) -> list[Any]:
    """The worst first; among equals, the later step first (a py-spy straggler explains
    the watchdog timeouts that the log step found)."""
    found = [(i, f) for i, o in enumerate(outcomes.values()) for f in o.findings]
    found.sort(key=lambda t: (SEVERITY_ORDER.get(t[1].severity.name, 9), -t[0]))
    return [f for _i, f in found]


def cut(text: str, width: int) -> str:
    """``text`` on one line of ``width`` cells, ending in an ellipsis when cut."""
    text = sanitize(text)
    return text if len(text) <= width else text[:max(1, width - 1)] + "…"


def findings_text(outcomes: dict[str, StepOutcome], width: int = 200) -> Text:
    """One line per finding that is not OK (cut to ``width`` with an ellipsis; a CRIT's
    first line of evidence under it: the straggler's stack), then each finding in full
    with its detail and evidence, then every action with its exact command."""
    text = Text()
    found = ordered_findings(outcomes)
    worth = [f for f in found if f.severity.name != "OK"]
    for f in worth:
        name = f.severity.name
        text.append(f" {name} ", style=SEVERITY_STYLE.get(name, ""))
        text.append(" " + cut(f.title, width - len(name) - 3) + "\n")
        if name == "CRIT" and f.evidence:
            text.append("   " + cut(f.evidence[0], width - 3) + "\n", style="italic")
    oks = len(found) - len(worth)
    if oks:
        text.append(f" {oks} OK finding(s) below\n", style="dim")
    if worth:
        text.append("\n")
    for f in found:
        name = f.severity.name
        text.append(f" {name} ", style=SEVERITY_STYLE.get(name, ""))
        text.append(f" {shorten(f.title)}\n")
        if f.detail and name != "OK":
            text.append(f"     {shorten(f.detail, 400, 100)}\n", style="dim")
        if name in ("CRIT", "WARN"):
            for line in f.evidence[:DETAIL_LINES]:
                text.append(f"     {shorten(line, 300, 60)}\n", style="italic")
            if len(f.evidence) > DETAIL_LINES:
                text.append(f"     … and {len(f.evidence) - DETAIL_LINES} more line(s): the evidence pane\n",
                            style="dim")
        if f.fix:
            text.append(f"     fix: {sanitize(f.fix)}\n", style="italic")
    for o in outcomes.values():
        for argv in o.argv:
            text.append(f"[{o.status}] ", style=STATUS_STYLE.get(o.status, ""))
            text.append(f"$ {sanitize(shlex.join(argv))}\n", style="bold")
            if o.why:
                text.append(f"     {sanitize(o.why)}\n", style="dim")
    return text


class RunbookScreen(ScreenOffers, Screen):
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="runbook.back"),
                Binding("x", "act", "Do proposed actions", id="runbook.act")]
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    DEFAULT_CSS = """
    RunbookScreen #rb-title { height: 1; }
    RunbookScreen #rb-result { height: auto; max-height: 3; display: none; }
    RunbookScreen #rb-result.-shown { display: block; }
    RunbookScreen #rb-body { height: 1fr; }
    RunbookScreen.-wide #rb-body { layout: horizontal; }
    RunbookScreen #rb-left { width: 2fr; }
    RunbookScreen.-narrow #rb-left { width: 1fr; height: 1fr; }
    RunbookScreen #rb-steps { height: auto; max-height: 40%; border: round $accent; overflow-x: hidden; }
    RunbookScreen.-narrow #rb-steps { max-height: 5; }
    RunbookScreen #rb-findings-box { height: 1fr; min-height: 6; border: round $accent; }
    RunbookScreen #rb-evidence { width: 3fr; border: round $accent; }
    RunbookScreen.-narrow #rb-evidence { width: 1fr; height: 5; }
    """

    class Facts(Message, namespace=FACTS_NAMESPACE):  # the App's on_plugin_facts
        """What the run found so far (``straggler_node`` ...), after each step: the App
        keeps it, even when the operator leaves before the run ends."""

        def __init__(self, book: str, job_id: Any, node: Any, facts: dict[str, Any]) -> None:
            super().__init__()
            self.book, self.job_id, self.node, self.facts = book, job_id, node, facts

    class Finished(Facts, namespace=FACTS_NAMESPACE):
        """The run ended; its final facts."""

    def __init__(self, book: Any, rc: Any, mode: str = "propose") -> None:
        """``mode``: propose, act, or validate (a node's probes, then the resume offered if all OK)."""
        super().__init__()
        self.book, self.rc, self.mode = book, rc, mode
        self.outcomes: dict[str, StepOutcome] = {}
        self.crumb = f"runbook {book.name}"
        self._lines: list[str] = []
        self.finished = False  # the run has ended (steps a jump or a condition passes over get no outcome)
        self.current = ""  # the id of the step running now (shown, highlighted, before its action asks)
        self.asking = ""  # what the dialog in front asks for, when no step does (a validation's resume)

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        what = f"job {self.rc.job_id}" if self.rc.job_id else f"node {self.rc.node}"
        yield Static(Text(f" Runbook {sanitize(self.book.title)} on {sanitize(str(what))} ({self.mode})",
                          style="bold", no_wrap=True, overflow="ellipsis"), id="rb-title")
        yield Static("", id="rb-result")
        with Vertical(id="rb-body"):
            with Vertical(id="rb-left"):
                with VerticalScroll(id="rb-steps"):
                    yield Static(steps_text(self.book, {}), id="rb-steps-text")
                with VerticalScroll(id="rb-findings-box"):
                    yield Static(Text("running…", style="dim"), id="rb-findings")
            yield RichLog(id="rb-evidence", wrap=True, markup=False, highlight=False, max_lines=5000)
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.rc.events = self._evidence  # the worker runs on the event loop: direct calls are safe
        self.run_worker(self._run(), name="runbook", exclusive=True)

    @property
    def evidence_lines(self) -> list[str]:
        """The evidence written so far, as plain lines."""
        return list(self._lines)

    def _evidence(self, line: str) -> None:
        self._lines.append(sanitize(line))
        self.query_one("#rb-evidence", RichLog).write(Text(sanitize(line)))

    def _show_steps(self) -> None:
        self.query_one("#rb-steps-text", Static).update(steps_text(self.book, self.outcomes, self.current))

    def _step_start(self, step: Any) -> None:
        """Show the step about to run, scrolled into view and highlighted: at 80x24 only
        three step lines fit, and an action must never ask about a step not on screen."""
        self.current = step.id
        self._show_steps()
        index = [s.id for s in self.book.steps].index(step.id)
        box = self.query_one("#rb-steps", VerticalScroll)
        box.scroll_to(y=max(0, index - 1), animate=False, immediate=True)

    def step_in_view(self) -> bool:
        """Whether the current step's line is inside the steps pane's visible lines."""
        if not self.current:
            return False
        index = [s.id for s in self.book.steps].index(self.current)
        box = self.query_one("#rb-steps", VerticalScroll)
        top = round(box.scroll_y)
        return top <= index < top + box.scrollable_content_region.height

    def confirm_origin(self) -> str:
        """For the confirmation dialog: which runbook step this action is (the gate's
        confirmation shows it, so the step is named even where the dialog covers the list)."""
        if not self.current:
            return self.asking
        ids = [s.id for s in self.book.steps]
        step = self.book.steps[ids.index(self.current)]
        return f"runbook {self.book.name}, step {ids.index(self.current) + 1} of {len(ids)}: {step.title}"

    def _step_done(self, outcome: StepOutcome) -> None:
        self.outcomes[outcome.id] = outcome
        self._show_steps()
        self._show_findings()
        self.post_message(self.Facts(self.book.name, self.rc.job_id, self.rc.node, dict(self.rc.facts)))

    def _show_findings(self) -> None:
        box = self.query_one("#rb-findings", Static)
        box.update(findings_text(self.outcomes, box.size.width or 78))

    def on_resize(self) -> None:
        if self.outcomes:
            self.call_after_refresh(self._show_findings)  # the overview's lines are cut to the pane's width

    async def _run(self) -> None:
        engine_mode = "propose" if self.mode == "validate" else self.mode  # a validation acts on nothing itself
        await run_runbook(self.book, self.rc, engine_mode, on_step=self._step_done, on_start=self._step_start)
        self.current = ""
        self._show_steps()
        result = self.query_one("#rb-result", Static)
        text = result_text(self.book, self.outcomes, self.mode)
        result.update(text)
        result.add_class("-shown")
        if self.mode == "validate":
            result.update(text + await self._offer_resume())
        self.finished = True
        self.post_message(self.Finished(self.book.name, self.rc.job_id, self.rc.node, dict(self.rc.facts)))

    async def _offer_resume(self) -> Text:
        """After a validation: the resume, through the gate (its one confirmation dialog,
        audited with the verdict), only when every finding is OK. A failed step or an
        input not read is UNKNOWN: the resume is then not offered."""
        from cockpit.plugins.api import CockpitError, Declined, verdict

        sev = verdict([f for o in self.outcomes.values() for f in o.findings]).name
        if sev != "OK":
            return Text(f"\n resume not offered: the validation is {sev}, not OK", style="bold red")
        self.asking = f"validation {self.book.name} passed (OK) on node {self.rc.node}: resume it?"
        try:
            plan = self.rc.ctx.actions.plan("resume", [self.rc.node])
            outcome = await self.rc.ctx.actions.execute(plan, note=f"validated: runbook {self.book.name} OK")
        except Declined:
            return Text("\n resume declined: the node stays drained", style="yellow")
        except CockpitError as exc:  # read-only refusal, the audit log, the gate's own errors
            return Text(f"\n resume not done: {sanitize(str(exc))}", style="bold red")
        finally:
            self.asking = ""
        if outcome.ok:
            return Text(f"\n resumed {self.rc.node} (audited)", style="bold green")
        return Text(f"\n resume failed: {sanitize('; '.join(r.detail for r in outcome.failed))}", style="bold red")

    def copy_text(self) -> tuple[str, str] | None:
        """What ``y`` copies here: the proposed commands, one a line."""
        lines = [shlex.join(argv) for o in self.outcomes.values() for argv in o.argv]
        return ("\n".join(lines), "the proposed command(s)") if lines else None

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
        if self.mode == "validate":
            self.notify("a validation acts on nothing: the resume is offered at its end, only if all is OK")
            return
        # A fresh context (the same inputs, no facts or findings of this run) for the acting run.
        rc = replace(self.rc, job=None, facts={}, findings=[], events=None)
        self.app.switch_screen(type(self)(self.book, rc, "act"))
