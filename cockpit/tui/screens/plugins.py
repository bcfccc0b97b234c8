"""Plugin screens in the TUI: keys, palette entries and the openers.

Installed by CockpitApp on mount (:func:`install`). Keys (app-wide, so they
work from a row and from a detail screen):

* ``l``: layout of the selected job: a TP/PP/DP form (prefilled: TP = the
  job's GPUs per node, PP = 1, DP inferred), then ``cockpit check layout
  --job ID`` and the layout plugin's picture;
* ``w``: "why is this stuck?": the hung-job runbook for a job, the gpu-xid
  runbook for a node (or a GPU row's node). Runbooks start in propose mode;
  ``x`` on the runbook screen runs them again doing the proposed actions,
  each one confirmed through the actions layer (read-only refuses, audited).

The command palette lists every plugin command and screen, every runbook,
the layout plan form and the NCCL screen. Nothing here imports a plugin
until it is used; a broken plugin or screen is a notification.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Input, Select

from cockpit.core.text import clean
from cockpit.errors import CockpitError, ReadOnlyError, UsageError
from cockpit.hostlist import collapse
from cockpit.tui.plugin_support import check_args, import_object, load_plugins_for_app, plugin_context
from cockpit.tui.screens.actions import current_targets
from cockpit.tui.screens.plugin_forms import CheckResultView, ConfirmLaunch, LayoutForm

KEYS = (
    ("l", "layout of the selected job: TP/PP/DP form, then rank map picture and findings (layout plugin)"),
    ("w", "why is this stuck? job: hung-job runbook; node or GPU row: gpu-xid runbook"),
    ("x (runbook screen)", "run the runbook again doing its proposed actions, each confirmed"),
)
JOB_RUNBOOK, NODE_RUNBOOK = "hung-job", "gpu-xid"


# ---------------------------------------------------------------- lookups
def _plugin(app: Any, name: str):
    plugin = load_plugins_for_app(app).plugins.get(name)
    if plugin is None:
        app.notify(f"the {name} plugin is not loaded (see `cockpit check` for why)", severity="warning")
    return plugin


def _context(app: Any, plugin: Any, progress=None):
    try:
        return plugin_context(app, plugin, progress)
    except CockpitError as exc:
        app.notify(str(exc), severity="error", timeout=10)
        return None


def _screen_class(app: Any, plugin: Any, name: str):
    path = plugin.screens.get(name)
    if not path:
        app.notify(f"plugin {plugin.name} has no screen {name!r}", severity="error")
        return None
    try:
        return import_object(path)
    except UsageError as exc:
        app.notify(str(exc), severity="error", timeout=15)
        return None


def selected_job(app: Any):
    """The job under the cursor (jobs view, job detail, or the job holding a GPU row)."""
    snap = app.snapshot
    if snap is None:
        return None
    kind, targets = current_targets(app)
    if kind == "job" and targets:
        return next((j for j in snap.jobs if str(j.job_id) == targets[0]), None)
    if app.screen is app.main and app.current_view() == "gpus":
        from cockpit.tui.rows import gpu_holders

        keys = app.selected_keys()
        if keys:
            node, _, idx = str(keys[0]).rpartition(":")
            return gpu_holders(snap.jobs).get((node, int(idx))) if idx.isdecimal() else None
    return None


def infer_parallel(job: Any) -> dict[str, Any]:
    """Form defaults: TP = the job's GPUs per node (a TP group inside a node), PP = 1, DP inferred."""
    gpn = max((g.count for g in job.gpus), default=0) or (job.gpus_per_node or 0)
    return {"tp": gpn or "", "pp": 1, "dp": ""}


def _flags(values: Mapping[str, str]) -> list[str]:
    out: list[str] = []
    for key, value in values.items():
        out += [f"--{key.replace('_', '-')}", value]
    return out


# ---------------------------------------------------------------- layout
def open_job_layout(app: Any) -> None:
    job = selected_job(app)
    if job is None:
        app.notify("select a job (jobs view, a job's detail or a GPU it holds) to validate its layout", severity="warning")
        return
    plugin = _plugin(app, "layout")
    if plugin is None:
        return
    title = f"Layout of job {job.display_id} {clean(job.name, 40)} ({len(job.nodes) or job.node_count} nodes)"

    def chosen(values: dict[str, str] | None) -> None:
        if values is not None:
            run_layout(app, plugin, ["--job", str(job.job_id), *_flags(values)])

    app.push_screen(LayoutForm(title, infer_parallel(job)), callback=chosen)


def open_layout_plan(app: Any) -> None:
    plugin = _plugin(app, "layout")
    if plugin is None:
        return
    kind, targets = current_targets(app)
    nodes = collapse(list(targets)) if kind == "node" and targets else ""

    def chosen(values: dict[str, str] | None) -> None:
        if values is not None:
            run_layout(app, plugin, _flags(values))

    app.push_screen(LayoutForm("Plan a layout: nodes and TP/PP/DP", {"nodes": nodes, "pp": 1}, plan=True), callback=chosen)


def run_layout(app: Any, plugin: Any, argv: list[str]) -> None:
    """Run the layout check in a worker, then show the plugin's layout screen."""
    app.run_worker(_layout(app, plugin, argv), name="layout-check", group="plugin-layout", exclusive=True)


async def _layout(app: Any, plugin: Any, argv: list[str]) -> None:
    check = next((c for c in plugin.checks if c.name == "layout"), None)
    ctx = _context(app, plugin)
    if check is None or ctx is None:
        return
    try:
        result = await check.run(ctx, check_args(check, argv))
    except CockpitError as exc:
        app.notify(f"layout: {exc}", severity="error", timeout=10)
        return
    cls = _screen_class(app, plugin, "layout")
    if cls is not None:
        app.push_screen(cls(result))


# ---------------------------------------------------------------- runbooks
def open_why(app: Any) -> None:
    kind, targets = current_targets(app)
    if not targets:
        app.notify("select a job or a node first", severity="warning")
        return
    open_runbook(app, JOB_RUNBOOK if kind == "job" else NODE_RUNBOOK, kind, targets[0])


def open_runbook(app: Any, name: str, kind: str | None = None, target: str | None = None) -> None:
    """The runbook screen for ``name`` on a job or node (the selection when not given)."""
    plugin = _plugin(app, "runbooks")
    if plugin is None:
        return
    try:
        books, problems = import_object("cockpit_runbooks:load_runbooks")()
    except CockpitError as exc:
        app.notify(str(exc), severity="error")
        return
    for pr in problems:
        app.notify(f"runbook {pr}", severity="warning", timeout=10)
    book = books.get(name)
    if book is None:
        app.notify(f"no runbook {name!r} (known: {', '.join(sorted(books))})", severity="error")
        return
    if target is None:
        kind, targets = current_targets(app)
        target = targets[0] if targets else None
    if target is None or kind != book.target:
        app.notify(f"runbook {name} needs a {book.target}: select one first", severity="warning")
        return
    ctx = _context(app, plugin)
    cls = _screen_class(app, plugin, "runbook")
    if ctx is None or cls is None:
        return
    run_context = import_object("cockpit_runbooks.context:RunContext")
    rc = run_context(ctx, job_id=target) if kind == "job" else run_context(ctx, node=target)
    app.push_screen(runbook_screen(cls)(book, rc, "propose"))


def runbook_screen(base: type) -> type:
    """The plugin's runbook screen plus ``x``: run again doing the proposed actions."""

    class TuiRunbookScreen(base):
        BINDINGS = [Binding("x", "act", "Do proposed actions")]

        def action_act(self) -> None:
            actions = self.rc.ctx.actions
            what = f"job {self.rc.job_id}" if self.rc.job_id else f"node {self.rc.node}"
            if actions is None:
                self.app.notify("this backend cannot act on the cluster", severity="error")
                return
            try:
                actions.refuse_if_read_only(f"runbooks.{self.book.name}", (what,))
            except ReadOnlyError as exc:
                self.app.notify(str(exc), severity="error", timeout=10)
                return
            if self.mode == "act":
                self.app.notify("this run already does its actions (each one asked for confirmation)")
                return
            rc = type(self.rc)(self.rc.ctx, job_id=self.rc.job_id, node=self.rc.node)
            self.app.switch_screen(type(self)(self.book, rc, "act"))

    return TuiRunbookScreen


# ---------------------------------------------------------------- NCCL
def open_nccl(app: Any) -> None:
    plugin = _plugin(app, "nccl")
    if plugin is None:
        return
    ctx = _context(app, plugin)
    cls = _screen_class(app, plugin, "nccl")
    if ctx is None or cls is None:
        return
    kind, targets = current_targets(app)
    nodes = collapse(list(targets)) if kind == "node" and targets else ""
    app.push_screen(nccl_screen(cls)(ctx, nodes))


def nccl_screen(base: type) -> type:
    """The plugin's NCCL screen, opened on the selected nodes."""

    class TuiNcclScreen(base):
        def __init__(self, context: Any, nodes: str = "") -> None:
            super().__init__(context)
            self.initial_nodes = nodes

        def on_mount(self) -> None:
            super().on_mount()
            if self.initial_nodes:
                self.query_one("#nodes", Input).value = self.initial_nodes

        def action_start(self) -> None:
            # Each submission is confirmed by the gate's dialog (argv and script), refused
            # and audited in read-only mode, and audited with Slurm's answer.
            if not self.query_one("#nodes", Input).value.strip():
                self.app.notify("give the nodes to test, e.g. node[01-04]", severity="warning")
                return
            base.action_start(self)

    return TuiNcclScreen


# ---------------------------------------------------------------- generic
def open_plugin_screen(app: Any, plugin: Any, name: str) -> None:
    """A third-party plugin's screen: constructed with its CheckContext."""
    ctx = _context(app, plugin)
    cls = _screen_class(app, plugin, name)
    if ctx is None or cls is None:
        return
    try:
        screen = cls(ctx)
    except Exception as exc:  # a plugin's constructor bug is reported, not raised
        app.notify(f"plugin {plugin.name}: screen {name} failed: {type(exc).__name__}: {exc}", severity="error")
        return
    app.push_screen(screen)


def run_plugin_check(app: Any, plugin: Any, check: Any) -> None:
    async def run() -> None:
        ctx = _context(app, plugin)
        if ctx is None:
            return
        try:
            result = await check.run(ctx, check_args(check, []))
        except CockpitError as exc:
            app.notify(f"check {check.name}: {exc} (run it headless: cockpit check {check.name} --help)", severity="error")
            return
        app.push_screen(CheckResultView(result))

    app.run_worker(run(), name=f"check-{check.name}", group="plugin-check", exclusive=True)


BUNDLED_OPENERS = {"layout": lambda app, _p: _layout_command(app), "runbook": lambda app, _p: open_why(app),
                   "nccl": lambda app, _p: open_nccl(app)}


def _layout_command(app: Any) -> None:
    if selected_job(app) is not None:
        open_job_layout(app)
    else:
        open_layout_plan(app)


def _opener(app: Any, plugin: Any, target: str):
    if target in plugin.screens and target in BUNDLED_OPENERS:
        return lambda: BUNDLED_OPENERS[target](app, plugin)
    if target in plugin.screens:
        return lambda: open_plugin_screen(app, plugin, target)
    check = next((c for c in plugin.checks if c.name == target), None)
    if check is not None:
        return lambda: run_plugin_check(app, plugin, check)
    return lambda: app.notify(f"plugin {plugin.name}: command target {target!r} is neither a screen nor a check",
                              severity="error")


def _palette(app: Any, loaded: Any) -> None:
    for plugin in loaded.plugins.values():
        covered = set()
        for title, target in plugin.commands.items():
            app.add_command(title, f"{plugin.description} [plugin {plugin.name}]", _opener(app, plugin, target))
            covered.add(target)
        for name in plugin.screens:
            if name not in covered:
                app.add_command(f"{plugin.name}: {name}", f"Open the {name} screen [plugin {plugin.name}]",
                                _opener(app, plugin, name))
                covered.add(name)
        for chk in plugin.checks:
            if chk.name not in covered:
                app.add_command(f"Check: {chk.name}", f"{chk.description} [plugin {plugin.name}]",
                                _opener(app, plugin, chk.name))
    if "layout" in loaded.plugins:
        app.add_command("Layout: plan (nodes + TP/PP/DP)", "Validate a planned layout before submitting [plugin layout]",
                        lambda: open_layout_plan(app))
        app.add_command("Layout: selected job (l)", "TP/PP/DP form, then the layout picture [plugin layout]",
                        lambda: open_job_layout(app))
    if "runbooks" in loaded.plugins:
        _runbook_entries(app)


def _runbook_entries(app: Any) -> None:
    try:
        books, _problems = import_object("cockpit_runbooks:load_runbooks")()
    except CockpitError:
        return
    for book in sorted(books.values(), key=lambda b: b.name):
        app.add_command(f"Runbook: {book.title} ({book.name})", f"Run it for the selected {book.target} [plugin runbooks]",
                        lambda n=book.name: open_runbook(app, n))


def install(app: Any) -> None:
    """The app's seam: keys ``l`` and ``w``, palette entries, plugin warnings as notifications."""
    loaded = load_plugins_for_app(app)
    app.action_plugin_layout = lambda: open_job_layout(app)
    app.action_plugin_why = lambda: open_why(app)
    app.bind("l", "plugin_layout", description="Layout")
    app.bind("w", "plugin_why", description="Why stuck?")
    keys = getattr(app, "extra_keys", None)
    if keys is None:
        keys = app.extra_keys = []
    keys.extend(KEYS)
    _palette(app, loaded)
