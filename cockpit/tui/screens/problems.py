"""``!``: what the last fetch could not read or judge, one line each.

The header counts the records that were not understood ("1 node not
understood"); this lists every error of the snapshot behind it, the records
named, so the operator sees what is missing from the views. Cluster strings are
shown as Text, never as markup.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from cockpit.models.unread import summary
from cockpit.text import clean


class ProblemsScreen(ModalScreen):
    """``errors``: the snapshot's errors (the screen is handed them, it fetches nothing)."""

    BINDINGS = [Binding("escape,q,exclamation_mark", "app.pop_screen", "Close", id="problems.close")]
    DEFAULT_CSS = """
    ProblemsScreen { align: center middle; }
    ProblemsScreen > VerticalScroll { width: 90%; max-width: 140; height: auto; max-height: 90%;
        border: round $warning; background: $surface; padding: 0 1; }
    """

    def __init__(self, errors: Sequence[str]) -> None:
        super().__init__()
        self.errors = tuple(errors)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            title = summary(self.errors) or ("nothing was left out" if not self.errors else "warnings")
            yield Static(Text(f"Last fetch: {title}", style="bold underline"))
            if not self.errors:
                yield Static(Text("Every record of the last fetch was read."))
            for err in self.errors:
                yield Static(Text("• " + clean(err, 400)), classes="problem")
