"""The layout picture in the TUI (imported by the TUI only: it imports Textual).

``LayoutScreen(result_data)`` takes what ``cockpit check layout`` produced
(``CheckResult``, its ``to_dict()``, or the ``data`` mapping) and shows the
nodes x GPUs grid next to the findings; ``p`` toggles the fix preview.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Header, Static

from .picture import draw, summary_lines

SEVERITY_STYLE = {"CRIT": "bold white on red", "WARN": "bold black on yellow", "OK": "green", "UNKNOWN": "magenta"}


def _normalise(result: Any) -> dict[str, Any]:
    """Accept a CheckResult, its dict, or the bare data mapping."""
    if hasattr(result, "to_dict"):
        result = result.to_dict()
    if isinstance(result, Mapping) and "data" in result:
        return dict(result)
    return {"check": "layout", "status": "OK", "summary": "", "findings": [], "data": dict(result or {})}


class LayoutGrid(Widget):
    """Draws the current (or previewed) layout to fit its own size."""

    DEFAULT_CSS = "LayoutGrid { height: 1fr; width: 3fr; overflow: hidden; }"
    preview: reactive[bool] = reactive(False)

    def __init__(self, data: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data = data

    def current(self) -> Mapping[str, Any] | None:
        if self.preview and self.data.get("preview"):
            return self.data["preview"]
        return self.data.get("layout") or self.data.get("preview")

    def render(self) -> Text:
        layout = self.current()
        if layout is None:
            return Text("No rank map: the sizes do not fit the allocation (see findings).")
        text = draw(layout, self.data.get("topology", {}), self.size.width, self.size.height - 1)
        if self.preview and self.data.get("preview"):
            text = Text("PREVIEW: " + "; ".join(layout.get("changes", [])) + "\n", style="bold green") + text
        return text


class FindingsPanel(Static):
    DEFAULT_CSS = "FindingsPanel { padding: 0 1; }"


def findings_text(result: Mapping[str, Any], layout: Mapping[str, Any] | None) -> Text:
    """Findings with their rule and fix, then the group summary. Plain text, no markup."""
    out = Text()
    out.append(f"{result.get('status', '')} ", style=SEVERITY_STYLE.get(result.get("status", ""), ""))
    out.append(str(result.get("summary", "")) + "\n")
    for f in result.get("findings", []):
        out.append(f" {f['severity']} ", style=SEVERITY_STYLE.get(f["severity"], ""))
        out.append(f" {f['title']} ({f['rule']})\n")
        if f.get("fix"):
            out.append("  fix: ", style="bold green")
            out.append(str(f["fix"]) + "\n")
    if layout:
        out.append("\n")
        out.append_text(summary_lines(layout))
    return out


class LayoutScreen(Screen):
    """The layout of one job or plan: picture, findings, fix preview."""

    DEFAULT_CSS = "#layout-findings { width: 2fr; border-left: vkey $primary; }"
    BINDINGS = [
        Binding("p", "toggle_preview", "Preview fix"),
        Binding("escape,q", "app.pop_screen", "Back"),
    ]
    crumb = "layout"

    def __init__(self, result_data: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.result = _normalise(result_data)

    def compose(self) -> ComposeResult:
        data = self.result["data"]
        yield Header(show_clock=False)
        with Horizontal():
            yield LayoutGrid(data, id="layout-grid")
            with VerticalScroll(id="layout-findings"):
                yield FindingsPanel(findings_text(self.result, data.get("layout")))
        yield Footer(show_command_palette=False)

    def action_toggle_preview(self) -> None:
        grid = self.query_one(LayoutGrid)
        if not grid.data.get("preview"):
            self.notify("No fix to preview: the layout needs no placement change.")
            return
        grid.preview = not grid.preview
