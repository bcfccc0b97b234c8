"""The dialogs of an operator action: menu, parameters, a confirmation that shows
the exact argv and the targets, and the per-target results.

The flow that strings them together is cockpit.tui.acting (key ``a``); the gate's
confirmation policy in the TUI (cockpit.tui.plugin_support.dialog_confirm) shows
:class:`ConfirmAction` too. Cluster strings are shown as Text, never markup.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, OptionList, Select, Static
from textual.widgets.option_list import Option

from cockpit.core.actions import ACTIONS, REASON_TEMPLATES, SIGNALS, Outcome, Params, Plan, make_reason
from cockpit.text import sanitize
from cockpit.tui.services import host_of
from cockpit.tui.screens.joblog import JobLogScreen  # noqa: F401 - moved to joblog.py; importers of this name remain

_CSS = """
ActionModal { align: center middle; }
ActionModal > DialogBody { width: 90%; max-width: 110; height: auto; max-height: 100%;
    border: thick $warning; background: $surface; padding: 0 2; }
ActionModal .argv { color: $text; background: $panel; padding: 0 1; height: auto; max-height: 16; }
ActionModal .script { background: $panel; padding: 0 1; height: auto; max-height: 12; }
ActionModal Horizontal { height: auto; margin-top: 1; }
ActionModal OptionList { height: auto; max-height: 12; }
ActionModal #template { border: none; max-height: 8; }
ActionModal .details { height: auto; max-height: 12; }
ActionModal .error { color: $error; height: auto; }
"""


class DialogBody(VerticalScroll, can_focus=False):
    """A dialog's frame: it scrolls on a short terminal but never takes the focus from its fields."""


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
        with DialogBody():
            yield Static(Text(f"{len(self.targets)} {self.kind}(s): {_short(self.targets)}"))
            yield OptionList(*opts, id="action-menu")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


class ParamsForm(ActionModal):
    """Asks what an action needs (reason, signal, time limit, nice); dismisses with a dict.

    A reason is a template (the list, first) and/or free text; a missing or bad
    value is said inside the dialog, which stays open."""

    # The first field has the focus as the screen becomes active (not a later focus() call):
    # keys typed right behind the key that opened the form (a fast typist, a batched SSH
    # link) reach it. DOM order picks: the template list, the signal, the value, else Next.
    AUTO_FOCUS = "#template, #signal, Input, #ok"

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name_ = name

    def compose(self) -> ComposeResult:
        spec = ACTIONS[self.name_]
        with DialogBody():
            hint = "  reason: a template (↑↓ enter), then detail or your own" if spec.needs_reason else ""
            yield Static(Text(spec.title, style="bold") + Text(hint))
            if spec.needs_reason:
                opts = [Option(Text("free text (no template)"), id="")]
                opts += [Option(Text(v), id=k) for k, v in REASON_TEMPLATES.items()]
                yield OptionList(*opts, id="template")
                yield Static("", id="chosen")  # the template chosen, said (then Enter goes to the detail)
                yield Input(placeholder="detail after the template, or the whole reason, exactly as Slurm should record it",
                            id="reason")
            elif self.name_ == "signal":
                yield Select([(s, s) for s in SIGNALS], value="USR1", allow_blank=False, id="signal")
            elif self.name_ == "timelimit":
                yield Input(placeholder="MIN, H:M:S, D-H:M, +MIN, UNLIMITED", id="value")
            elif self.name_ == "nice":
                yield Input(placeholder="nice value, e.g. 100", id="value")
            yield Static("", id="form-error", classes="error")
            with Horizontal():
                yield Button("Next", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")


    def _values(self) -> dict[str, Any]:
        spec = ACTIONS[self.name_]
        if spec.needs_reason:
            menu = self.query_one("#template", OptionList)
            opt = menu.get_option_at_index(menu.highlighted) if menu.highlighted is not None else None
            tpl = (opt.id or None) if opt is not None else None  # the highlighted template is the one used
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

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        label = str(event.option.prompt)
        self.query_one("#chosen", Static).update(Text(f"  template: {label}" if event.option.id else
                                                      "  no template: the reason is your own text"))
        self.set_focus(self.query_one("#reason", Input))  # at once: the next Enter is the Input's

    def _submit(self) -> None:
        values = self._values()
        why = self.problem(values)
        if why:
            self.query_one("#form-error", Static).update(Text(why, style="bold"))
            return
        self.dismiss(values)

    def problem(self, values: dict[str, Any]) -> str:
        """What is missing or wrong, in words ('' when the values will do)."""
        from cockpit.core.actions import build_plan
        from cockpit.errors import UsageError

        if ACTIONS[self.name_].needs_reason and not (values.get("reason") or "").strip():
            return f"{ACTIONS[self.name_].title.lower()} needs a reason: pick a template or type one"
        try:
            build_plan(self.name_, ["node01"] if ACTIONS[self.name_].kind == "node" else ["1"], Params(**values))
        except UsageError as exc:
            return str(exc)
        return ""

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self._submit()
        else:
            self.dismiss(None)


class ConfirmAction(ActionModal):
    """Shows the exact argv per target and what each target is (a job's user, name
    and GPUs; the jobs a drain leaves running); ``y`` runs, ``n``/escape does not,
    ``c`` copies the commands."""

    BINDINGS = [Binding("y", "answer(True)", "Run"), Binding("n,escape", "answer(False)", "Cancel"),
                Binding("c", "copy", "Copy command")]

    def __init__(self, plan: Plan, where: str, details: list[Text] | None = None, origin: str = "") -> None:
        """``origin``: what asks, when not the operator's own ``a`` (a runbook's step)."""
        super().__init__()
        self.plan, self.where, self.details, self.origin = plan, where, list(details or ()), origin

    def compose(self) -> ComposeResult:
        spec = self.plan.spec
        head = Text(f"{spec.title}: {len(self.plan.targets)} {spec.kind}(s) via {self.where}", style="bold")
        if spec.dangerous:
            head.append("  (dangerous)", style="bold red")
        with DialogBody():
            if self.origin:
                yield Static(Text(sanitize(self.origin), style="bold reverse"), id="origin")
            yield Static(head)
            if self.details:
                with VerticalScroll(classes="details"):
                    yield Static(Text("\n").join(self.details), id="details")
            else:
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

    def action_copy(self) -> None:
        host_of(self).copy_value("\n".join(self.plan.describe()), "the command")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class ActionResults(ActionModal):
    """Per-target results: Slurm's own words for each failure."""

    BINDINGS = [Binding("escape,enter,q", "dismiss_none", "Close")]

    def __init__(self, outcome: Outcome, note: str = "") -> None:
        """``note``: a line under the results (which targets are still marked)."""
        super().__init__()
        self.outcome, self.note = outcome, note

    def compose(self) -> ComposeResult:
        res = self.outcome.results
        n_fail = len(self.outcome.failed)
        body = Text(f"{self.outcome.plan.spec.title}: {len(res) - n_fail} done, {n_fail} not done\n",
                    style="bold red" if n_fail else "bold green")
        for r in res:
            body.append(f"{r.target}  ")
            word = {"done": "done", "unknown": "UNKNOWN (outcome unknown)"}.get(r.status, r.status.upper())
            body.append(word, style="green" if r.ok else "bold red")
            if r.detail and not r.ok:
                body.append(f"  {sanitize(r.detail)}")
            body.append("\n")
        if self.note:
            body.append(self.note, style="dim")
        body.append("\nenter closes", style="dim")
        with DialogBody():
            yield Static(body, id="results")


def _short(targets: tuple[str, ...], limit: int = 120) -> str:
    text = ", ".join(targets)
    return text if len(text) <= limit else text[: limit - 1] + "…"
