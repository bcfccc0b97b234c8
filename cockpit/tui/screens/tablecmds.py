"""The column chooser (``C``, ``:columns``) and the export (``E``, ``:export``) of a
table view.

The chooser lists the view's columns, checked when shown; Enter saves the choice
as ``[tui] hidden_columns_<view>`` in the config file (cockpit.core.configwrite:
the file cockpit read, else the user's), Esc leaves it as it was. A file that
cannot be written costs a one-line error, and the choice still holds for this
session. The export writes the rows as shown (filtered, sorted, the shown
columns, whole cells) to the path typed (``.json``: JSON, else CSV) and says in
one line what it wrote or why it could not.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, SelectionList, Static

from cockpit.errors import CockpitError

DIALOG_CSS = """
{cls} {{ align: center middle; }}
{cls} > Vertical {{ width: 72; max-width: 100%; height: auto; max-height: 100%; border: round $accent;
                    background: $surface; padding: 0 1; }}
{cls} SelectionList {{ height: auto; max-height: 16; }}
{cls} .hint {{ color: $text-muted; height: auto; }}
"""


def hidden_key(kind: str) -> str:
    return f"hidden_columns_{kind}"


def hidden_from_config(view: Any, config: Any) -> tuple[frozenset[int], list[str]]:
    """The column indexes the config hides for ``view``, and the labels it names that
    the view does not have (a warning each, never a lost view)."""
    text = str(getattr(config.tui, hidden_key(view.kind), "") or "")
    labels = [c.label for c in view.table.columns]
    wanted = [w.strip() for w in text.split(",") if w.strip()]
    hidden = frozenset(labels.index(w) for w in wanted if w in labels and labels.index(w) != 0)
    return hidden, [w for w in wanted if w not in labels]


class ColumnsScreen(ModalScreen[frozenset[int] | None]):
    """Which columns of a view are shown; dismissed with the hidden indexes, or None."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="columns.cancel"),
                Binding("enter", "save", "Save", priority=True, id="columns.save")]
    DEFAULT_CSS = DIALOG_CSS.format(cls="ColumnsScreen")

    def __init__(self, title: str, labels: list[str], hidden: frozenset[int]) -> None:
        super().__init__()
        self.view_title, self.labels, self.hidden = title, labels, hidden

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(f"Columns of {self.view_title}", style="bold"))
            # the first column is the row's key (job id, node name): always shown
            yield SelectionList[int](*((label, i, i not in self.hidden) for i, label in enumerate(self.labels)
                                       if i != 0), id="columns-list")
            yield Static(Text("space: show/hide  enter: save to the config  esc: cancel"), classes="hint")

    def on_mount(self) -> None:
        self.query_one(SelectionList).focus()

    def action_save(self) -> None:
        shown = set(self.query_one(SelectionList).selected)
        self.dismiss(frozenset(i for i in range(1, len(self.labels)) if i not in shown))


class ExportScreen(ModalScreen[str | None]):
    """A file path for the export; dismissed with it, or None."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="export.cancel")]
    DEFAULT_CSS = DIALOG_CSS.format(cls="ExportScreen")

    def __init__(self, title: str, rows: int, default: str) -> None:
        super().__init__()
        self.view_title, self.rows, self.default = title, rows, default

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(f"Export {self.view_title}: {self.rows} row(s) as shown", style="bold"))
            yield Input(value=self.default, id="export-path")
            yield Static(Text("a .json name writes JSON, any other CSV  enter: write  esc: cancel"), classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)


def choose_columns(app: Any, view: Any) -> None:
    """Open the chooser for ``view``; save what is chosen (one line says where or why not)."""
    from dataclasses import replace

    from cockpit.core.configwrite import save_tui_key

    table = view.table
    labels = [c.label for c in table.columns]

    def chosen(hidden: frozenset[int] | None) -> None:
        if hidden is None:
            return
        table.hide_columns(hidden)
        value = ",".join(labels[i] for i in sorted(hidden))
        app.config = replace(app.config, tui=replace(app.config.tui, **{hidden_key(view.kind): value}))
        try:
            path = save_tui_key(app.config, hidden_key(view.kind), value)
        except CockpitError as exc:
            app.notify(f"columns not saved: {exc}", severity="error", markup=False)
            return
        app.notify(f"{view.title}: {len(labels) - len(hidden)} of {len(labels)} columns, saved to {path}", markup=False)

    app.push_screen(ColumnsScreen(view.title, labels, table.hidden_columns), callback=chosen)


def export_rows(view: Any, now: float) -> tuple[list[str], list[list[str]]]:
    """The labels of the shown columns and every row's whole cells, in the order shown."""
    table = view.table
    shown = table.shown_columns()
    data = table.data
    rows = []
    for key in data.order:
        texts = table._row_texts(data.rows[key], now)  # noqa: SLF001 - what the table draws, live cells included
        rows.append([texts[i] for i in shown])
    return [table.columns[i].label for i in shown], rows


def export_view(app: Any, view: Any) -> None:
    """Ask for a path, write the view's rows as shown there, say what was written."""
    from cockpit.core.tablefile import default_name, write_table

    now = app.clock()

    def chosen(path: str | None) -> None:
        if path is None:
            return
        labels, rows = export_rows(view, app.clock())
        try:
            written = write_table(path, labels, rows)
        except CockpitError as exc:
            app.notify(f"not exported: {exc}", severity="error", markup=False)
            return
        app.notify(f"exported {len(rows)} row(s) of {view.title} to {written}", markup=False)

    app.push_screen(ExportScreen(view.title, len(view.table.data.order), default_name(view.kind, now)),
                    callback=chosen)


def table_view(app: Any) -> Any:
    """The table view in front (None on the Pulse, or with another screen in front)."""
    if app.screen is not app.main:
        return None
    view = app.main.active_view()
    return view if hasattr(view, "table") and hasattr(view, "schema") else None


def run_table_command(app: Any, word: str) -> None:
    """``:columns`` / ``:export`` on the table view in front."""
    view = table_view(app)
    if view is None:
        app.notify(f":{word} works on a table view (2-5: Nodes, GPUs, Partitions, Jobs)", severity="warning")
    elif word == "columns":
        choose_columns(app, view)
    else:
        export_view(app, view)
