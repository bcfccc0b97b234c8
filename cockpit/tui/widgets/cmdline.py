"""The ``:`` command line: an Input whose Tab completes commands, job ids, node names
and runbooks (cockpit.tui.commands.completions), as s9s and k9s do.

One candidate: the line becomes it (a space after a command that takes an
argument). Several: the line grows to what they share, and they are listed.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from textual.binding import Binding
from textual.widgets import Input

SHOWN = 12  # candidates listed under the line; the rest are counted


class CommandLine(Input):
    BINDINGS = [Binding("tab", "complete", "Complete", show=False, id="command.complete")]

    def __init__(self, complete: Callable[[str], list[str]], show: Callable[[str], None], **kw) -> None:
        """``complete(text)``: the whole lines ``text`` may become; ``show(line)``: says it under the line."""
        super().__init__(**kw)
        self._complete, self._show = complete, show

    def action_complete(self) -> None:
        text = self.value.lstrip(":")
        found = self._complete(text)
        if not found:
            self._show(f"nothing completes :{text}")
            return
        common = os.path.commonprefix(found)
        if len(found) == 1:
            common += " " if " " not in common else ""
        if len(common) > len(text):
            self.value = common
            self.cursor_position = len(common)
        if len(found) > 1:
            more = f" … and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
            self._show("  ".join(found[:SHOWN]) + more)
        else:
            self._show("")
