"""The command palette's cockpit entries (a Textual command :class:`~textual.command.Provider`
declared in ``CockpitApp.COMMANDS``) and the ``:`` commands of the command line.

``:`` commands are declarations (:class:`ColonCommand` in :data:`COLON_COMMANDS`):
a name and its aliases, what it opens, and what Tab completes after it (a job
id, a node name, one of a plugin opener's choices). The palette lists the same declarations under the
same names ("View: nodes  :nodes"), so every view and screen the palette opens
has a ``:`` name, and a new screen or command is one more declaration. Plugins'
screens get ``:NAME`` from their own declarations.

Every entry is built from declarations when the palette opens: the views, the
poller, every catalogued action, following output and processes, telemetry,
and what the loaded plugins declare (their commands, screens, checks, keys and
openers, one entry per choice an opener lists).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

from cockpit.core.actions import ACTIONS
from cockpit.text import clean
from cockpit.tui.services import services_for

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp


@dataclass(frozen=True)
class PaletteCommand:
    title: str
    help: str
    run: Callable[[], Any]


@dataclass(frozen=True)
class ColonCommand:
    """One ``:`` command. ``run(app, arg)``; ``arg``: what Tab completes after the name
    ("job", "node", "cluster", "choice" (its ``words``) or "" for nothing); ``title``: its palette entry
    ('' when the palette lists it otherwise, or not at all)."""

    names: tuple[str, ...]  # the first is the name shown; the rest are aliases
    run: Callable[[Any, str], Any]
    help: str
    title: str = ""
    arg: str = ""
    words: Callable[[Any], list[str]] | None = None  # what Tab completes, when ``arg`` is no kind of its own

    @property
    def name(self) -> str:
        return self.names[0]


def _view(kind: str) -> Callable[[Any, str], Any]:
    def run(app: Any, arg: str) -> None:
        app.action_view(kind)
        if arg:
            app.main.say(app.main.active_view().set_filter(arg))
    return run


def _open_job(app: Any, arg: str) -> None:
    app.main.open_job(arg) if arg else app.action_view("jobs")


def _open_node(app: Any, arg: str) -> None:
    from cockpit.tui.screens.detail import NodeDetailScreen

    app.push_screen(NodeDetailScreen(arg, services=services_for(app))) if arg else app.action_view("nodes")


def _accounting(name: str) -> Callable[[Any, str], Any]:
    def run(app: Any, arg: str) -> None:
        from cockpit.tui import accounting

        opener = getattr(accounting, name)
        opener(app, arg) if arg and name in ("open_history", "open_utilization") else opener(app)
    return run


def _cluster(app: Any, arg: str) -> None:
    """:cluster NAME shows that cluster in the main views; alone, the fleet Pulse (c)."""
    if not arg:
        app.action_clusters()
        return
    err = app.switch_cluster(arg)
    if err:
        app.notify(clean(err, 200), severity="warning", markup=False)
    elif app.screen is not app.main:  # the screen in front stays on its own cluster
        app.notify(f"the views now show cluster {clean(arg, 40)}; this screen stays on its own (Esc)", markup=False)


def _app(action: str) -> Callable[[Any, str], Any]:
    return lambda app, _arg: getattr(app, action)()


def _table(word: str) -> Callable[[Any, str], Any]:
    def run(app: Any, _arg: str) -> None:
        from cockpit.tui.screens.tablecmds import run_table_command

        run_table_command(app, word)

    return run


_VIEW_WORDS = {"pulse": ("overview", "p"), "nodes": ("no",), "gpus": ("gpu", "g"),
               "partitions": ("partition", "part", "pa"), "jobs": ("j", "squeue")}
COLON_COMMANDS: tuple[ColonCommand, ...] = (
    *(ColonCommand((kind, *aliases), _view(kind), f"Show the {kind} view (key {i}); :{kind} WORDS filters it",
                   f"View: {kind}") for i, (kind, aliases) in enumerate(_VIEW_WORDS.items(), 1)),
    ColonCommand(("job",), _open_job, "A job's detail: :job ID (Tab completes the id)", arg="job"),
    ColonCommand(("node",), _open_node, "A node's detail: :node NAME (Tab completes the name)", arg="node"),
    ColonCommand(("audit", "log"), _app("action_audit_log"), "Past actions: who, what, result; follow-ups "
                 "through the gate (A)", "Audit log (A)"),
    ColonCommand(("logs", "slurmlogs"), _app("action_slurm_logs"), "The end of slurmctld's log, and the selected "
                 "node's slurmd log (L)", "Slurm logs (L)"),
    ColonCommand(("history", "hist"), _accounting("open_history"), "Jobs that ended in the last day (:history 7d): "
                 "state, exit code, why it failed; Enter: its efficiency", "History: finished jobs (accounting)"),
    ColonCommand(("utilization", "util", "utilisation"), _accounting("open_utilization"), "Allocated, idle in "
                 "allocations, unallocated, drained; per day against the 70-80% band (:utilization 30d)",
                 "Utilization: GPU-hours (7 days)"),
    ColonCommand(("reservations", "resv", "maintenance"), _accounting("open_reservations"),
                 "Every reservation and what it will block", "Reservations and maintenance windows"),
    ColonCommand(("events", "nodehistory"), _accounting("open_node_history"), "The selected node's events with "
                 "reason, who and when, and whether it flaps", "Node: event history (drains, downs, reboots)"),
    ColonCommand(("efficiency", "eff", "seff"), _accounting("open_finished_job"), "CPU, memory and GPU efficiency "
                 "of the selected finished job, each with its source", "Job: efficiency / accounting record"),
    ColonCommand(("procs", "ps"), _app("action_job_processes"), "List the selected job's processes on its nodes (P)",
                 "Job: processes"),
    ColonCommand(("follow", "output", "tail"), _app("action_follow_output"), "Follow the selected job's stdout (f)",
                 "Job: follow output"),
    ColonCommand(("describe", "show"), _app("action_describe"), "scontrol show job/node of the selection, as text (d)",
                 "Describe: what Slurm says (d)"),
    ColonCommand(("cluster", "ctx", "context"), _cluster, "Show another cluster in the views: :cluster NAME "
                 "(Tab completes); alone: every cluster (c)", arg="cluster"),
    ColonCommand(("fleet", "clusters"), _app("action_clusters"), "Every cluster: its state and age, its suspects and "
                 "drained nodes; Enter switches (c)", "Fleet Pulse: every cluster (c)"),
    ColonCommand(("act", "action"), _app("action_act"), "Act on the marked rows or the cursor row (a)"),
    ColonCommand(("keys", "help", "?"), _app("action_show_keys"), "Show every key and what it does (?)",
                 "Keys: every key (?)"),
    ColonCommand(("pause", "resume"), _app("action_toggle_pause"), "Stop or restart refreshing (p)",
                 "Pause / resume polling"),
    ColonCommand(("refresh",), _app("action_refresh_now"), "Fetch everything now (r)", "Refresh now"),
    ColonCommand(("columns", "cols"), _table("columns"), "Show or hide the view's columns; saved in the config "
                 "file (C)", "Columns: choose the view's columns"),
    ColonCommand(("export",), _table("export"), "The rows as shown (filtered, sorted, shown columns) to a CSV or "
                 "JSON file (E)", "Export the view"),
    ColonCommand(("quit", "q", "exit"), _app("action_request_quit"), "Quit cockpit (asks first, as q does)", "Quit"),
)


def colon_commands(app: CockpitApp) -> list[ColonCommand]:
    """cockpit's ``:`` commands, then the plugins': their openers' (``:runbook NAME``) and ``:SCREEN``."""
    out = list(COLON_COMMANDS)
    taken = {n for c in out for n in c.names}
    for plugin in app.plugins.plugins.values():
        for spec in app.plugins.openers(plugin).values():
            names = tuple(n for n in spec.colon if n not in taken)
            if names and (spec.colon_arg != "choice" or app.openers.choices(plugin, spec)):
                taken |= set(names)
                out.append(_opener_colon(plugin, spec, names))
    for plugin in app.plugins.plugins.values():
        for name in app.plugins.screens(plugin):
            if name not in taken:
                taken.add(name)
                out.append(ColonCommand((name,), lambda a, _arg, p=plugin, n=name: a.openers.open_target(p, n),
                                        f"Open the {name} screen [plugin {plugin.name}]"))
    return out


def _opener_colon(plugin: Any, spec: Any, names: tuple[str, ...]) -> ColonCommand:
    """A plugin opener's ``:`` command: its argument a choice (``:runbook NAME``), a node or a job."""
    if spec.colon_arg == "choice":
        def run(a: Any, arg: str) -> None:
            a.openers.open(plugin, spec, choice=arg)

        return ColonCommand(names, run, spec.help, arg="choice",
                            words=lambda a: [c.name for c in a.openers.choices(plugin, spec)])
    return ColonCommand(names, lambda a, arg: a.openers.open(plugin, spec, arg=arg), spec.help, arg=spec.colon_arg)


def find_colon(app: CockpitApp, word: str) -> ColonCommand | None:
    word = word.lower()
    return next((c for c in colon_commands(app) if word in c.names), None)


def run_colon(app: CockpitApp, text: str) -> str:
    """Run one command line (without its ``:``); '' or what was wrong, in words."""
    word, _, arg = text.strip().lstrip(":").partition(" ")
    if not word:
        return ""
    cmd = find_colon(app, word)
    if cmd is None:
        return f"unknown command :{text.strip()} (Tab lists the commands)"
    cmd.run(app, arg.strip())
    return ""


def arg_words(app: CockpitApp, kind: str) -> list[str]:
    """What Tab may complete after a command: job ids, node names (a plugin's choices: its ``words``)."""
    snap = app.snapshot
    if kind == "job":
        return [str(j.job_id) for j in snap.jobs] if snap is not None else []
    if kind == "node":
        return [n.name for n in snap.nodes] if snap is not None else []
    if kind == "cluster":
        return app.fleet.names()
    return []


def completions(app: CockpitApp, text: str) -> list[str]:
    """The whole lines ``text`` may complete to: a command's name, or a command and its argument."""
    word, space, arg = text.lstrip(":").partition(" ")
    if not space:  # one candidate per command: its name, else the alias that matches
        word = word.lower()
        return sorted({next(n for n in (c.name, *c.names) if n.startswith(word))
                       for c in colon_commands(app) if any(n.startswith(word) for n in c.names)})
    cmd = find_colon(app, word)
    if cmd is None or not cmd.arg:
        return []
    return [f"{cmd.name if word.lower() not in cmd.names else word} {w}"
            for w in sorted(set(cmd.words(app) if cmd.words else arg_words(app, cmd.arg))) if w.startswith(arg.strip())]


def palette_entry(app: CockpitApp, cmd: ColonCommand) -> PaletteCommand:
    """A ``:`` command as the palette lists it: its title, its help and its ``:`` name."""
    return PaletteCommand(cmd.title, f"{cmd.help}  (:{cmd.name})", lambda: cmd.run(app, ""))


def cockpit_commands(app: CockpitApp) -> list[PaletteCommand]:
    """Every cockpit entry of the palette, in a stable order: the ``:`` commands'
    first, each with its ``:`` name in its help."""
    out = [palette_entry(app, c) for c in COLON_COMMANDS if c.title]
    out += [
        PaletteCommand("Filter", "Filter the current table (/): words, state:drain user:alice gpus>0",
                       app.main.action_filter),
        PaletteCommand("Sort: next column", "Cycle the sort column of the table (s; S reverses)", app.action_cycle_sort),
    ]
    out += [PaletteCommand(f"{spec.kind.capitalize()}: {spec.title.lower()}", f"{spec.title} for the selected {spec.kind}s",
                           lambda n=spec.name: app.acting.run_named(n)) for spec in ACTIONS.values()]
    out += [
        PaletteCommand("Telemetry: poll the selected nodes now (t)", "nvidia-smi on the selection, through the probe runner",
                       app.action_telemetry_now),
        PaletteCommand("Copy the selection (y)", "The job ids, node list or command under the cursor, with OSC 52",
                       app.action_copy),
        PaletteCommand("Unmark all rows (u)", "Clear the marks of the table in view", app.action_unmark_all),
    ]
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
        out += opener_commands(app, plugin, tag)
    return out


def opener_commands(app: CockpitApp, plugin: Any, tag: str) -> list[PaletteCommand]:
    """A plugin's openers with a palette title, then one entry per choice (each runbook)."""
    out: list[PaletteCommand] = []
    openers = app.openers
    for spec in app.plugins.openers(plugin).values():
        if spec.title:
            colon = f"  (:{spec.colon[0]})" if spec.colon else ""
            out.append(PaletteCommand(spec.title, f"{spec.help}{colon} {tag}",
                                      lambda s=spec: openers.open(plugin, s)))
        out += [PaletteCommand(c.title, f"{c.help} {tag}", lambda s=spec, n=c.name: openers.open(plugin, s, choice=n))
                for c in openers.choices(plugin, spec)]
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
