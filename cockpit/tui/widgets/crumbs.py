"""The breadcrumb line at the top of a pushed screen: ``Jobs › 48213 › dgx001``.

The App keeps the path of its screen stack in its ``sub_title`` (each screen
names itself with a ``crumb`` attribute; see CockpitApp.crumbs); this widget
shows it. Plugin screens, which may not import cockpit.tui, show the same path
through Textual's Header (which shows the App's sub_title).

Both show the App's ``title`` too, and that is where a simulated cluster says so
(:func:`app_title`): one mark for every pushed screen, cockpit's and plugins'
(the main screen's header says SIMULATED from the snapshot).
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


def app_title(simulated: bool) -> str:
    """The App's title: ``cockpit``, and ``SIMULATED`` on a simulated cluster (the demo)."""
    return "cockpit · SIMULATED" if simulated else "cockpit"


class Breadcrumb(Static):
    DEFAULT_CSS = """
    Breadcrumb { height: 1; background: $panel; color: $text; }
    """

    def on_mount(self) -> None:
        self.watch(self.app, "sub_title", self._show, init=False)
        self.watch(self.app, "title", self._show, init=True)

    def _show(self, _changed: str = "") -> None:
        t = Text(f" {self.app.title} ", style="bold reverse", no_wrap=True, overflow="ellipsis")
        t.append(" ")
        t.append(self.app.sub_title, style="bold")
        self.update(t)
