"""The ``?`` screen and the quit confirmation.

``?`` lists the keys of the view in front first (read from the bindings that
are active there: the focused table's, the screen's), then the keys that work
everywhere (the App's and the plugins', each with its help line; one that is off
says why), then moving around. Cluster strings never appear here; the help
texts are cockpit's own, shown as Text all the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

KEYS = (
    ("1-5", "views: pulse, nodes, GPUs, partitions, jobs"),
    (":", "command line: :nodes :jobs :gpus :partitions :pulse, :job ID, :node NAME, :history, :utilization, "
          ":reservations, :audit, :logs, :runbook NAME, :q; Tab completes commands, job ids and nodes"),
    ("/", "filter: words, field:value (state:drain user:alice partition:train), state:PD, gpus>0, -state:idle"),
    ("esc", "clear the filter / close a line / go back"),
    ("↑ ↓ PgUp PgDn g G", "move; mouse wheel scrolls"),
    ("ctrl+p", "command palette: every command"),
    ("q", "quit (asks first; back, on a detail screen); ctrl+c asks too, twice quits"),
)

Section = tuple[str, Sequence[tuple[str, str]]]


class KeysScreen(ModalScreen):
    """``sections``: (title, [(key, what it does)]), the current view's first."""

    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "Close", id="keys.close")]
    DEFAULT_CSS = """
    KeysScreen { align: center middle; }
    KeysScreen > VerticalScroll { width: 90%; max-width: 110; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 0 1; }
    """

    def __init__(self, sections: Sequence[Section] = ()) -> None:
        super().__init__()
        self.sections = [(title, tuple(rows)) for title, rows in sections if rows] + [("Moving around", KEYS)]

    @property
    def rows(self) -> list[tuple[str, str]]:
        """Every (key, help) shown, in order."""
        return [row for _title, rows in self.sections for row in rows]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            for title, rows in self.sections:
                t = Table.grid(padding=(0, 2))
                t.add_column(style="bold", no_wrap=True, min_width=12)
                t.add_column()
                for key, what in rows:
                    t.add_row(Text(key), Text(what))
                yield Static(Text(title, style="bold underline"))
                yield Static(t)


class QuitScreen(ModalScreen[bool]):
    """"Quit cockpit?": ``y``, ``q`` or Enter quits; ``n`` or Escape stays."""

    BINDINGS = [Binding("y,q", "answer(True)", "Quit", id="quit.yes"),
                Binding("n,escape", "answer(False)", "Stay", id="quit.no")]
    AUTO_FOCUS = "#quit-yes"
    DEFAULT_CSS = """
    QuitScreen { align: center middle; }
    QuitScreen > Vertical { width: auto; height: auto; border: thick $warning; background: $surface; padding: 1 2; }
    QuitScreen Horizontal { height: auto; width: auto; margin-top: 1; }
    """

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Quit cockpit?", style="bold"))
            with Horizontal():
                yield Button("Quit (y)", variant="warning", id="quit-yes")
                yield Button("Stay (n)", id="quit-no")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "quit-yes")
