"""The command palette's cockpit entries: a Textual command :class:`~textual.command.Provider`
declared in ``CockpitApp.COMMANDS``.

Every entry is built from declarations when the palette opens: the views, the
poller, every catalogued action, following output and processes, telemetry,
and what the loaded plugins declare (their commands, screens and checks, the
layout plan form and every runbook).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

from cockpit.core.actions import ACTIONS

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp


@dataclass(frozen=True)
class PaletteCommand:
    title: str
    help: str
    run: Callable[[], Any]


def cockpit_commands(app: CockpitApp) -> list[PaletteCommand]:
    """Every cockpit entry of the palette, in a stable order."""
    from cockpit.tui.screens.main import VIEW_ORDER

    out = [PaletteCommand(f"View: {kind}", f"Show the {kind} view (key {i}, :{kind})",
                          lambda k=kind: app.action_view(k)) for i, kind in enumerate(VIEW_ORDER, 1)]
    out += [
        PaletteCommand("Filter", "Filter the current table (/): words, state:drain user:alice gpus>0",
                       app.main.action_filter),
        PaletteCommand("Pause / resume polling", "Stop or restart refreshing (p)", app.action_toggle_pause),
        PaletteCommand("Refresh now", "Fetch everything now (r)", app.action_refresh_now),
        PaletteCommand("Sort: next column", "Cycle the sort column of the table (s; S reverses)", app.action_cycle_sort),
        PaletteCommand("Keys: every key (?)", "Show every key and what it does", app.action_show_keys),
    ]
    out += [PaletteCommand(f"{spec.kind.capitalize()}: {spec.title.lower()}", f"{spec.title} for the selected {spec.kind}s",
                           lambda n=spec.name: app.acting.run_named(n)) for spec in ACTIONS.values()]
    out += [
        PaletteCommand("Job: follow output", "Follow the selected job's stdout (f)", app.action_follow_output),
        PaletteCommand("Job: processes", "List the selected job's processes on its nodes (P)", app.action_job_processes),
        PaletteCommand("Telemetry: poll the selected nodes now (t)", "nvidia-smi on the selection, through the probe runner",
                       app.action_telemetry_now),
        PaletteCommand("Copy the selection (y)", "The job ids, node list or command under the cursor, with OSC 52",
                       app.action_copy),
        PaletteCommand("Describe: what Slurm says (d)", "scontrol show job/node of the selection, as text",
                       app.action_describe),
        PaletteCommand("Slurm logs (L)", "The end of slurmctld's log, and the selected node's slurmd log",
                       app.action_slurm_logs),
        PaletteCommand("Audit log (A)", "Past actions: who, what, result; follow-ups through the gate",
                       app.action_audit_log),
        PaletteCommand("Unmark all rows (u)", "Clear the marks of the table in view", app.action_unmark_all),
        PaletteCommand("Quit", "Quit cockpit (asks first)", app.action_request_quit),
    ]
    from cockpit.tui.accounting import accounting_commands

    out += accounting_commands(app)  # history, node events, reservations, utilisation
    from cockpit.tui.screens.tablecmds import table_commands

    out += table_commands(app)  # the column chooser and the export (C, E)
    return out + plugin_commands(app)


def plugin_commands(app: CockpitApp) -> list[PaletteCommand]:
    """What the loaded plugins declare: commands, then screens and checks no command covers."""
    out: list[PaletteCommand] = []
    openers = app.openers
    for plugin in app.plugins.plugins.values():
        tag = f"[plugin {plugin.name}]"
        covered: set[str] = set()
        for title, target in app.plugins.commands(plugin).items():
            out.append(PaletteCommand(title, f"{plugin.description} {tag}",
                                      lambda p=plugin, t=target: openers.open_target(p, t)))
            covered.add(target)
        for name in app.plugins.screens(plugin):
            if name not in covered:
                out.append(PaletteCommand(f"{plugin.name}: {name}", f"Open the {name} screen {tag}",
                                          lambda p=plugin, n=name: openers.open_target(p, n)))
                covered.add(name)
        for check in plugin.checks:
            if check.name not in covered:
                out.append(PaletteCommand(f"Check: {check.name}", f"{check.description} {tag}",
                                          lambda p=plugin, n=check.name: openers.open_target(p, n)))
        for entry in (k for k in app.plugins.keys.values() if k.plugin is plugin):
            out.append(PaletteCommand(f"{entry.spec.description} ({entry.spec.key})", f"{entry.spec.help} {tag}",
                                      lambda i=entry.spec.id: openers.key(i)))
    if app.plugins.get("layout") is not None:
        out.append(PaletteCommand("Layout: plan (nodes + TP/PP/DP)",
                                  "Validate a planned layout before submitting [plugin layout]", openers.layout_plan))
    for book in openers.runbooks():
        out.append(PaletteCommand(f"Runbook: {book.title} ({book.name})",
                                  f"Run it for the selected {book.target} [plugin runbooks]",
                                  lambda n=book.name: openers.runbook(n)))
    return out


class CockpitCommands(Provider):
    """The palette's cockpit commands (Textual's own system commands stay beside them)."""

    def _commands(self) -> list[PaletteCommand]:
        from cockpit.tui.app import CockpitApp

        app = self.app
        return cockpit_commands(app) if isinstance(app, CockpitApp) else []

    async def discover(self) -> Hits:
        for cmd in self._commands():
            yield DiscoveryHit(cmd.title, cmd.run, help=cmd.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for cmd in self._commands():
            score = matcher.match(cmd.title)
            if score > 0:
                yield Hit(score, matcher.highlight(cmd.title), cmd.run, help=cmd.help)
