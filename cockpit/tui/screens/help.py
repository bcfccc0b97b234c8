"""The ``?`` screen: every key. The table keys are listed here; the App's declared
bindings and the plugins' keys come with their help (CockpitApp.key_rows)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = (
    ("1-5", "views: pulse, nodes, GPUs, partitions, jobs"),
    (":", "command line: :nodes :jobs :gpus :partitions :pulse, :job ID, :node NAME, :q"),
    ("/", "filter: words, field:value (state:drain user:alice partition:train), gpus>0, -state:idle"),
    ("esc", "clear the filter / close a line / go back"),
    ("s / S", "sort by the next column / reverse (or click a header)"),
    ("↑ ↓ PgUp PgDn g G", "move; mouse wheel scrolls"),
    ("enter / double click", "open the row: job → detail → node, node → detail → jobs"),
    ("space", "mark a row (actions apply to marked rows, else to the cursor row)"),
    ("p", "pause / resume polling"),
    ("r", "refresh now"),
    ("ctrl+p", "command palette: every command"),
    ("?", "this screen"),
    ("q", "quit (back, on a detail screen)"),
)



class KeysScreen(ModalScreen):
    """``rows``: (key, what it does) after the table keys (the App's and plugins' keys)."""

    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "Close", id="keys.close")]
    DEFAULT_CSS = """
    KeysScreen { align: center middle; }
    KeysScreen > VerticalScroll { width: 90%; max-width: 100; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 0 1; }
    """

    def __init__(self, rows: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__()
        self.rows = tuple(rows)

    def compose(self) -> ComposeResult:
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold", no_wrap=True)
        t.add_column()
        for key, what in KEYS:
            t.add_row(key, Text(what))
        for key, desc in self.rows:
            t.add_row(key, Text(desc))
        with VerticalScroll():
            yield Static(Text("Keys", style="bold underline"))
            yield Static(t)
