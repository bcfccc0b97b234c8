"""Small dialogs the plugin wiring needs: an opener's form (its FormSpec), a
launch confirmation for plugin jobs, and a generic check-result view for
third-party checks. Cluster strings are shown as Text, never markup."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from cockpit.text import clean

_CSS = """
PluginModal { align: center middle; }
PluginModal > Vertical { width: 90%; max-width: 100; height: auto; max-height: 90%;
    border: thick $accent; background: $surface; padding: 1 2; }
PluginModal Horizontal { height: auto; margin-top: 1; }
PluginModal .row { height: auto; }
PluginModal .row Label { width: 22; padding: 1 1 0 0; }
PluginModal .row Input { width: 1fr; }
PluginModal .lines { background: $panel; padding: 0 1; height: auto; max-height: 16; }
"""


class PluginModal(ModalScreen):
    DEFAULT_CSS = _CSS
    BINDINGS = [Binding("escape", "dismiss_none", "Cancel")]

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


def form_title(template: str, job: Any = None) -> str:
    """A FormSpec's title with the selected job's {job_id}, {job_name} and {job_nodes} (its node count)."""
    if job is None:
        return template
    nodes = len(job.nodes) or job.node_count
    return template.format_map({"job_id": job.display_id, "job_name": clean(job.name, 40), "job_nodes": nodes})


class PluginForm(PluginModal):
    """A plugin opener's form (a FormSpec's fields: a job's TP/PP/DP, a plan's nodes too).

    Dismisses with {"tp": "8", ...} (only the filled fields) or None."""

    AUTO_FOCUS = "Input"

    def __init__(self, title: str, fields: Sequence[Any], defaults: Mapping[str, Any], submit: str = "Validate") -> None:
        super().__init__()
        self.title_text, self.defaults, self.submit = title, defaults, submit
        self.form_fields = tuple(fields)

    def fields(self) -> list[tuple[str, str]]:
        return [(f.name, f.label) for f in self.form_fields]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text, style="bold"))
            for name, label in self.fields():
                with Horizontal(classes="row"):
                    yield Label(label)
                    yield Input(str(self.defaults.get(name, "") or ""), id=f"f-{name}")
            with Horizontal():
                yield Button(self.submit, variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def values(self) -> dict[str, str]:
        out = {}
        for name, _ in self.fields():
            value = self.query_one(f"#f-{name}", Input).value.strip()
            if value:
                out[name] = value
        return out

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.dismiss(self.values())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(self.values() if event.button.id == "ok" else None)


class ConfirmLaunch(PluginModal):
    """``y`` launches what the lines describe, ``n``/escape does not."""

    BINDINGS = [Binding("y", "answer(True)", "Launch"), Binding("n,escape", "answer(False)", "Cancel")]
    AUTO_FOCUS = "#no"  # Enter alone never launches anything (and no query in on_mount: a fast "n" may come first)

    def __init__(self, title: str, lines: Sequence[str]) -> None:
        super().__init__()
        self.title_text, self.lines = title, tuple(lines)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text, style="bold"))
            yield Static(Text("\n".join(self.lines)), classes="lines", id="launch-lines")
            with Horizontal():
                yield Button("Launch (y)", variant="warning", id="yes")
                yield Button("Cancel (n)", id="no")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class CheckResultView(PluginModal):
    """A plugin check's result: status, summary, findings with rule and fix."""

    BINDINGS = [Binding("escape,enter,q", "dismiss_none", "Close")]

    def __init__(self, result: Any) -> None:
        super().__init__()
        self.result = result

    def compose(self) -> ComposeResult:
        r = self.result
        body = Text(f"{r.check}: {r.severity.name}  ", style="bold")
        body.append(str(r.summary))
        for f in r.findings:
            body.append(f"\n [{f.severity.name}] ", style="bold")
            body.append(f"{f.title}" + (f" ({f.rule})" if f.rule else ""))
            if f.fix:
                body.append(f"\n     fix: {f.fix}")
        with Vertical():
            with VerticalScroll():
                yield Static(body, id="check-result")
