"""``:`` on a screen other than the main one: the same command line (Tab completes
commands, job ids and node names) at the bottom, over the screen it was opened on.
The command then runs as it would from the main screen (``:history`` opens History
on top of the screen in front)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from cockpit.tui.widgets.cmdline import CommandLine


class CommandScreen(ModalScreen[str]):
    DEFAULT_CSS = """
    CommandScreen { align: left bottom; background: $background 0%; }
    CommandScreen > Vertical { height: auto; width: 100%; background: $panel; }
    CommandScreen #say { height: auto; color: $text-muted; }
    """
    BINDINGS = [Binding("escape", "close", "Close", show=False, id="command.close")]
    crumb = ":"

    def compose(self) -> ComposeResult:
        from cockpit.tui.commands import completions

        with Vertical():
            yield Static("", id="say")
            yield CommandLine(lambda text: completions(self.app, text), self._say,
                              placeholder=":command  (Tab completes; Esc closes)", id="command")

    def on_mount(self) -> None:
        self.set_focus(self.query_one(CommandLine))

    def _say(self, line: str) -> None:
        self.query_one("#say", Static).update(Text(line))  # candidates are cluster strings: text, not markup

    def action_close(self) -> None:
        self.dismiss("")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip().lstrip(":"))


def run_line(app: Any, text: str | None) -> None:
    """The dismissed line's command, run once the line is gone (it may push a screen);
    what was wrong is said on the screen it was typed over."""
    from cockpit.tui.commands import run_colon

    err = run_colon(app, text or "")
    if err:
        app.notify(err, severity="warning")
