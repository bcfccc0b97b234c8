"""The frame of a screen that shows one accounting answer over a window (the
last 14 days, 7 days ...): a title line; in a scroll, a status line that says
"asking accounting …" until the answer comes, or why none came; and what the
screen composes under it. ``[`` and ``]`` (:func:`window_keys`) step to the next
shorter or longer of a subclass's ``windows`` and ask again: the number keys
switch views, on these screens as everywhere (issue 25)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from cockpit.errors import CockpitError
from cockpit.plugins.specs import ScreenOffers
from cockpit.text import clean
from cockpit.tui.widgets.crumbs import Breadcrumb
from cockpit.tui.services import ClusterBound, ClusterServices, host_of

T = TypeVar("T")


def window_keys(prefix: str) -> list[Binding]:
    """``[`` / ``]``: a shorter / longer time window (the screen's ``window_step``)."""
    return [Binding("left_square_bracket", "window_step(-1)", "Shorter window", key_display="[", id=f"{prefix}.shorter"),
            Binding("right_square_bracket", "window_step(1)", "Longer window", key_display="]", id=f"{prefix}.longer")]


def stepped(windows: tuple[str, ...], window: str, step: int) -> str:
    """The window ``step`` places along ``windows`` from ``window``, kept at the ends."""
    at = windows.index(window) if window in windows else 0
    return windows[max(0, min(len(windows) - 1, at + step))]


class AccountingWindowScreen(ClusterBound, ScreenOffers, Screen):
    """A subclass names its widgets (``title_id``, ``status_id``), adds its own
    under the status line (``compose_body``) and defines ``load`` as its worker,
    which asks through :meth:`ask`."""

    title_id = ""
    status_id = ""
    windows: tuple[str, ...] = ()  # shortest first: what [ and ] step through

    def __init__(self, window: str, *, services: ClusterServices) -> None:
        """``services``: the cluster it asks (cockpit/tui/services.py)."""
        super().__init__()
        self.window = window
        self.bind_services(services)

    def compose(self) -> ComposeResult:
        yield Breadcrumb()
        yield Static("", id=self.title_id)
        with VerticalScroll():
            yield Static(Text("asking accounting …", style="dim"), id=self.status_id)
            yield from self.compose_body()
        yield Footer(show_command_palette=False)

    def compose_body(self) -> ComposeResult:
        """The widgets under the status line (none by default)."""
        return iter(())

    def on_mount(self) -> None:
        self.load()

    def action_window(self, window: str) -> None:
        self.window = window
        self.load()

    def action_window_step(self, step: int) -> None:
        self.action_window(stepped(self.windows, self.window, step))

    def load(self) -> Any:
        raise NotImplementedError

    async def ask(self, title: str, fetch: Callable[[Any, int, float], Awaitable[T]]) -> tuple[T, float] | None:
        """Show ``title``, then ``fetch(accounting, since, now)`` for the window:
        ``(its answer, now)``, or None once the status line says why there is none
        (no accounting, or a CockpitError from the query)."""
        from cockpit.core.accounting import parse_since, require_accounting

        self.query_one(f"#{self.title_id}", Static).update(Text(title))
        now = host_of(self).clock()
        try:
            acct = await require_accounting(self.services.backend)
            return await fetch(acct, parse_since(self.window, now), now), now
        except CockpitError as exc:
            self.query_one(f"#{self.status_id}", Static).update(Text(clean(str(exc), 300), style="bold"))
            return None
