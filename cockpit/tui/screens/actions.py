"""Operator actions in the TUI: menu, parameters, a confirmation that shows the
exact argv and the targets, per-target results, and a follow-mode job log.

Installed by CockpitApp on mount through :func:`install` (the app's seam):
``a`` opens the action menu for the selected rows (marked rows, else the
cursor row; on a detail screen, that job or node), ``f`` follows a job's
output, and the command palette lists every action. Everything runs through
cockpit.core.actions, so read-only mode, the audit log and the per-target
results are the same as headless. Cluster strings are shown as Text, never markup.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Input, OptionList, RichLog, Select, Static
from textual.widgets.option_list import Option

from cockpit.core.actions import ACTIONS, REASON_TEMPLATES, SIGNALS, Actions, Outcome, Params, Plan, build_plan, make_reason
from cockpit.core.text import sanitize
from cockpit.errors import CockpitError

_CSS = """
ActionModal { align: center middle; }
ActionModal > Vertical { width: 90%; max-width: 110; height: auto; max-height: 90%;
    border: thick $warning; background: $surface; padding: 1 2; }
ActionModal .argv { color: $text; background: $panel; padding: 0 1; height: auto; max-height: 16; }
ActionModal .script { background: $panel; padding: 0 1; height: auto; max-height: 12; }
ActionModal Horizontal { height: auto; margin-top: 1; }
ActionModal OptionList { height: auto; max-height: 18; }
"""


class ActionModal(ModalScreen):
    DEFAULT_CSS = _CSS
    BINDINGS = [Binding("escape", "dismiss_none", "Cancel")]

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class ActionMenu(ActionModal):
    """Pick an action for ``kind`` ("job" or "node"); dismisses with its name or None."""

    def __init__(self, kind: str, targets: tuple[str, ...]) -> None:
        super().__init__()
        self.kind, self.targets = kind, targets

    def compose(self) -> ComposeResult:
        opts = [Option(Text(f"{'! ' if s.dangerous else '  '}{s.title}"), id=s.name)
                for s in ACTIONS.values() if s.kind == self.kind]
        with Vertical():
            yield Static(Text(f"{len(self.targets)} {self.kind}(s): {_short(self.targets)}"))
            yield OptionList(*opts, id="action-menu")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


class ParamsForm(ActionModal):
    """Asks what an action needs (reason, signal, time limit, nice); dismisses with a dict."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name_ = name

    def compose(self) -> ComposeResult:
        spec = ACTIONS[self.name_]
        with Vertical():
            yield Static(Text(spec.title, style="bold"))
            if spec.needs_reason:
                yield Select([(v, k) for k, v in REASON_TEMPLATES.items()], prompt="free text (no template)", id="template")
                yield Input(placeholder="reason (or detail after the template), exactly as Slurm should record it", id="reason")
            elif self.name_ == "signal":
                yield Select([(s, s) for s in SIGNALS], value="USR1", allow_blank=False, id="signal")
            elif self.name_ == "timelimit":
                yield Input(placeholder="MIN, H:M:S, D-H:M, +MIN, UNLIMITED", id="value")
            elif self.name_ == "nice":
                yield Input(placeholder="nice value, e.g. 100", id="value")
            with Horizontal():
                yield Button("Next", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        inputs = self.query(Input)
        (inputs.first() if inputs else self.query_one("#ok", Button)).focus()

    def _values(self) -> dict[str, Any]:
        spec = ACTIONS[self.name_]
        if spec.needs_reason:
            sel = self.query_one("#template", Select)
            tpl = None if sel.is_blank() else str(sel.value)
            return {"reason": make_reason(tpl, self.query_one("#reason", Input).value)}
        if self.name_ == "signal":
            return {"signal": str(self.query_one("#signal", Select).value)}
        value = self.query_one("#value", Input).value.strip()
        if self.name_ == "nice":
            try:
                return {"nice": int(value)}
            except ValueError:
                return {"nice": None}
        return {"time_limit": value}

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.dismiss(self._values())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(self._values() if event.button.id == "ok" else None)


class ConfirmAction(ActionModal):
    """Shows the exact argv per target; ``y`` runs, ``n``/escape does not."""

    BINDINGS = [Binding("y", "answer(True)", "Run"), Binding("n,escape", "answer(False)", "Cancel")]

    def __init__(self, plan: Plan, where: str) -> None:
        super().__init__()
        self.plan, self.where = plan, where

    def compose(self) -> ComposeResult:
        spec = self.plan.spec
        head = Text(f"{spec.title}: {len(self.plan.targets)} {spec.kind}(s) via {self.where}", style="bold")
        if spec.dangerous:
            head.append("  (dangerous)", style="bold red")
        with Vertical():
            yield Static(head)
            yield Static(Text("targets: " + _short(self.plan.targets, 400)))
            yield Static(Text("\n".join(self.plan.describe())), classes="argv", id="argv")
            for script in self.plan.scripts():  # what sbatch gets on stdin, exactly
                with VerticalScroll(classes="script"):
                    yield Static(Text("\n".join(sanitize(line) for line in script.splitlines())), id="script")
            with Horizontal():
                yield Button("Run (y)", variant="error" if spec.dangerous else "primary", id="yes")
                yield Button("Cancel (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # Enter alone never runs anything

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class ActionResults(ActionModal):
    """Per-target results: Slurm's own words for each failure."""

    BINDINGS = [Binding("escape,enter,q", "dismiss_none", "Close")]

    def __init__(self, outcome: Outcome) -> None:
        super().__init__()
        self.outcome = outcome

    def compose(self) -> ComposeResult:
        res = self.outcome.results
        n_fail = len(self.outcome.failed)
        body = Text(f"{self.outcome.plan.spec.title}: {len(res) - n_fail} done, {n_fail} failed\n",
                    style="bold red" if n_fail else "bold green")
        for r in res:
            body.append(f"{r.target}  ")
            body.append("done" if r.ok else "FAILED", style="green" if r.ok else "bold red")
            if r.detail and not r.ok:
                body.append(f"  {r.detail}")
            body.append("\n")
        with Vertical():
            yield Static(body, id="results")


class JobLogScreen(Screen):
    """Follows a job's stdout or stderr until closed: the file here, or over SSH
    on the job's batch host when it is not readable here (the title says where)."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back"), Binding("e", "toggle_stream", "stdout/stderr")]

    def __init__(self, job: Any, stderr: bool = False) -> None:
        super().__init__()
        self.job, self.stderr = job, stderr
        self.source = ""  # "/path" or "node01:/path" once chosen

    def compose(self) -> ComposeResult:
        yield Static("", id="log-title")
        yield RichLog(max_lines=5000, wrap=False, markup=False, id="log")
        yield Footer()

    def on_mount(self) -> None:
        self._start()

    def action_toggle_stream(self) -> None:
        self.stderr = not self.stderr
        self._start()

    def _start(self) -> None:
        from cockpit.core.joblog import JobLogError, open_job_output
        from cockpit.core.text import clean, sanitize
        from cockpit.tui.screens.jobprocs import node_access

        log = self.query_one(RichLog)
        log.clear()
        try:
            out = open_job_output(self.job, stderr=self.stderr, **node_access(self.app))
        except JobLogError as exc:
            self.query_one("#log-title", Static).update(Text(clean(exc)))
            return
        label = "stderr" if self.stderr else "stdout"
        self.source = out.source
        how = " over SSH" if out.node else ""
        self.query_one("#log-title", Static).update(Text(f" job {self.job.job_id} {label}: {clean(out.source, 300)}{how} (following)"))
        self._follow(out)

    @work(exclusive=True, group="joblog")
    async def _follow(self, out: Any) -> None:
        from cockpit.core.joblog import JobLogError
        from cockpit.core.text import clean, sanitize

        log = self.query_one(RichLog)
        try:
            try:
                for line in await out.tail(200, partial=False):
                    log.write(Text(line))
            except JobLogError as exc:
                log.write(Text(f"{clean(exc)} (waiting for it to appear)"))
            async for line in out.follow(interval=1.0):
                log.write(Text(line))
        except JobLogError as exc:
            log.write(Text(f"stopped: {clean(exc)}"))
        finally:  # also on cancel: toggling the stream or leaving the screen closes its SSH pool
            await out.close()


def _short(targets: tuple[str, ...], limit: int = 120) -> str:
    text = ", ".join(targets)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def actions_for_app(app: Any) -> Actions | None:
    """The gate for the app's backend; None when it cannot act (a replay)."""
    from cockpit.config import Config
    from cockpit.core.actions import actions_for_backend
    from cockpit.tui.plugin_support import dialog_confirm

    actions = actions_for_backend(app.backend, app.config or Config(), read_only=bool(app.read_only),
                                  confirm=dialog_confirm(app))
    return actions if actions.executor is not None else None


def current_targets(app: Any) -> tuple[str, tuple[str, ...]]:
    """("job"|"node", keys) for what the operator is looking at; ("", ()) if nothing."""
    screen = app.screen
    key = getattr(screen, "key", None)
    if key is not None and screen is not app.main:
        kind = "job" if type(screen).__name__.startswith("Job") else "node"
        return kind, (str(key),)
    view = app.current_view()
    keys = app.selected_keys()
    if view == "jobs":
        return "job", tuple(str(k) for k in keys)
    if view in ("nodes", "gpus"):
        return "node", tuple(dict.fromkeys(str(k).split(":", 1)[0] for k in keys))
    return "", ()


async def action_flow(app: Any, kind: str, targets: tuple[str, ...], name: str | None = None,
                      params: dict[str, Any] | None = None) -> Outcome | None:
    """Menu -> parameters -> confirmation -> execute -> results. Runs in a worker."""
    actions = actions_for_app(app)
    if actions is None:
        app.notify(f"{getattr(app.backend, 'name', 'this backend')} cannot act on the cluster", severity="error")
        return None
    name = name or await app.push_screen_wait(ActionMenu(kind, targets))
    if not name:
        return None
    spec = ACTIONS[name]
    if params is None:
        params = {}
        if spec.needs_reason or name in ("signal", "timelimit", "nice"):
            params = await app.push_screen_wait(ParamsForm(name))
            if params is None:
                return None
    try:
        plan = build_plan(name, targets, Params(**params))
        actions.refuse_if_read_only(name, plan.targets)
    except CockpitError as exc:
        app.notify(str(exc), severity="error", timeout=8)
        return None
    if not await app.push_screen_wait(ConfirmAction(plan, actions.description)):
        return None
    try:
        outcome = await actions.execute(plan, confirmed=True)  # the dialog above asked
    except CockpitError as exc:
        app.notify(str(exc), severity="error", timeout=8)
        return None
    app.action_refresh_now()
    await app.push_screen_wait(ActionResults(outcome))
    return outcome


def _open_menu(app: Any) -> None:
    kind, targets = current_targets(app)
    if not targets:
        app.notify("select a job or node first (space marks several)", severity="warning")
        return
    app.run_worker(action_flow(app, kind, targets), name="action", group="action", exclusive=True)


def _follow_log(app: Any) -> None:
    kind, targets = current_targets(app)
    snap = app.snapshot
    job = None
    if kind == "job" and targets and snap is not None:
        job = next((j for j in snap.jobs if str(j.job_id) == targets[0]), None)
    if job is None:
        app.notify("select a job to follow its output", severity="warning")
        return
    app.push_screen(JobLogScreen(job))


def install(app: Any) -> None:
    """The app's seam: keys ``a`` (actions) and ``f`` (follow output), palette entries."""
    # Instance attributes: Textual looks actions up with getattr on the app.
    app.action_cockpit_actions = lambda: _open_menu(app)
    app.action_cockpit_follow = lambda: _follow_log(app)
    app.bind("a", "cockpit_actions", description="Act")
    app.bind("f", "cockpit_follow", description="Follow log", show=False)
    for spec in ACTIONS.values():
        def run(s=spec) -> None:
            kind, targets = current_targets(app)
            if kind != s.kind or not targets:
                app.notify(f"select {s.kind}s first for: {s.title}", severity="warning")
                return
            app.run_worker(action_flow(app, kind, targets, s.name), name="action", group="action", exclusive=True)
        app.add_command(f"{spec.kind.capitalize()}: {spec.title.lower()}", f"{spec.title} for the selected {spec.kind}s", run)
    app.add_command("Job: follow output", "Follow the selected job's stdout (f)", lambda: _follow_log(app))
    from cockpit.tui.screens import jobprocs

    jobprocs.install(app)  # P: the job's processes per node
