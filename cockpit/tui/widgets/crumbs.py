"""The breadcrumb line at the top of a pushed screen: ``Jobs › 48213 › dgx001``.

The App keeps the path of its screen stack in its ``sub_title`` (each screen
names itself with a ``crumb`` attribute; see CockpitApp.crumbs); this widget
shows it. Plugin screens, which may not import cockpit.tui, show the same path
through Textual's Header (which shows the App's sub_title).
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class Breadcrumb(Static):
    DEFAULT_CSS = """
    Breadcrumb { height: 1; background: $panel; color: $text; }
    """

    def on_mount(self) -> None:
        self.watch(self.app, "sub_title", self._show, init=True)

    def _show(self, path: str) -> None:
        t = Text(" cockpit ", style="bold reverse", no_wrap=True, overflow="ellipsis")
        t.append(" ")
        t.append(path, style="bold")
        self.update(t)
