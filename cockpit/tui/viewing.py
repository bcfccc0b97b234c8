"""Keys that show or copy what is under the cursor, owned by the App (``y``, ``d``, ``L``, ``A``).

``y`` copies with OSC 52 (the terminal puts it on the clipboard, over SSH too):
what the screen in front offers (its ``copy_text()``, as a
:class:`~cockpit.plugins.api.ScreenOffers`: a command, a path), else the job ids
or the node list of the selection. Only the base64 of the value goes
to the terminal, and the value is sanitized first, line by line, so a job name
cannot bring an escape of its own. ``d`` shows what Slurm says about the
selected job or node, ``L`` Slurm's logs, ``A`` the audit log, each of the cluster
of the screen in front (a detail's own, else the main views').
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cockpit.hostlist import collapse
from cockpit.plugins.specs import ScreenOffers
from cockpit.text import sanitize
from cockpit.tui.selection import current_targets
from cockpit.tui.services import services_for

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp


def osc52(text: str) -> str:
    """The sequence that asks the terminal to put ``text`` on the clipboard (what
    Textual's App.copy_to_clipboard writes): only the value, base64-encoded."""
    import base64

    return "\x1b]52;c;" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "\a"


class Viewers:
    def __init__(self, app: CockpitApp) -> None:
        self.app = app

    def copy_value(self, value: str, what: str) -> None:
        """Put ``value`` (sanitized) on the operator's clipboard and say so."""
        text = "\n".join(sanitize(line) for line in str(value).splitlines())
        self.app.copy_to_clipboard(text)
        shown = text if len(text) <= 60 else text[:59] + "…"
        self.app.notify(f"copied {what}: {shown}", title="clipboard (OSC 52)", timeout=4)

    def copy(self) -> None:
        screen = self.app.screen
        got = screen.copy_text() if isinstance(screen, ScreenOffers) else None
        if got:
            self.copy_value(*got)
            return
        kind, targets = current_targets(self.app)
        if not targets:
            self.app.notify("nothing to copy here: select a job or node", severity="warning")
        elif kind == "job":
            self.copy_value(" ".join(targets), "the job id" + ("s" if len(targets) > 1 else ""))
        else:
            self.copy_value(collapse(list(targets)), "the node" + (" list" if len(targets) > 1 else ""))

    def describe(self) -> None:
        from cockpit.tui.screens.slurmtext import DescribeScreen

        kind, targets = current_targets(self.app)
        if not targets or kind not in ("job", "node"):
            self.app.notify("select a job or a node to describe", severity="warning")
            return
        self.app.push_screen(DescribeScreen(kind, targets[0], services=services_for(self.app)))

    def slurm_logs(self) -> None:
        from cockpit.tui.screens.slurmtext import SlurmLogsScreen

        kind, targets = current_targets(self.app)
        node = targets[0] if kind == "node" and targets else None
        self.app.push_screen(SlurmLogsScreen(node, targets[0] if kind == "job" and targets else None,
                                            services=services_for(self.app)))

    def audit_log(self) -> None:
        """The gate's own audit log (the demo's is its own file), with this session's id:
        the viewer follows up only what can be followed up here."""
        from cockpit.errors import ConfigError
        from cockpit.tui.screens.audit import AuditScreen

        if isinstance(self.app.screen, AuditScreen):
            return
        services = services_for(self.app)  # a detail's cluster: its gate's log, its follow-ups
        try:
            audit = services.gate().audit
        except ConfigError as exc:
            self.app.notify(str(exc), severity="error")
            return
        self.app.push_screen(AuditScreen(str(audit.path), session=audit.session, simulated=audit.simulated,
                                         services=services))
