"""Opening plugin screens and running plugin checks from the TUI.

The App owns one :class:`PluginOpeners`; its keys (the plugins' KeySpecs) and
its palette entries call it. Openers a KeySpec may name:

* ``layout``: the layout of the selected job: a TP/PP/DP form (prefilled from the
  job's own launch line by the layout plugin, else TP = the job's GPUs per node,
  PP = 1, DP inferred), then ``cockpit check layout
  --job ID`` and the layout plugin's picture (a plan form when no job is selected,
  from the palette);
* ``why``: "why is this stuck?": the hung-job runbook for a job, the gpu-xid
  runbook for a node (or a GPU row's node), and for a pending job why it waits
  (cockpit/tui/screens/whypending.py). Runbooks start in propose mode; the
  runbook screen's own ``x`` runs them again doing the proposed actions, each one
  confirmed through the gate (read-only refuses, audited);
* ``nccl``: the NCCL screen on the selected nodes;
* any of the plugin's own screens (constructed with its CheckContext) or checks.

Nothing here imports a plugin's screen until it is opened; a broken one is a
notification naming the plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cockpit.text import clean
from cockpit.errors import CockpitError, UsageError
from cockpit.hostlist import collapse
from cockpit.models import Job
from cockpit.plugins.api import CheckContext, Plugin
from cockpit.tui.plugin_support import check_args, import_object, plugin_context
from cockpit.tui.screens.plugin_forms import CheckResultView, LayoutForm
from cockpit.tui.selection import current_targets, selected_job

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp

JOB_RUNBOOK, NODE_RUNBOOK = "hung-job", "gpu-xid"


def infer_parallel(job: Job) -> dict[str, Any]:
    """Form defaults: TP = the job's GPUs per node (a TP group inside a node), PP = 1, DP inferred."""
    gpn = max((g.count for g in job.gpus), default=0) or (job.gpus_per_node or 0)
    return {"tp": gpn or "", "pp": 1, "dp": ""}


def _flags(values: Mapping[str, str]) -> list[str]:
    out: list[str] = []
    for key, value in values.items():
        out += [f"--{key.replace('_', '-')}", value]
    return out


class PluginOpeners:
    """Opens plugin screens for what is under the cursor; every failure is a notification."""

    def __init__(self, app: CockpitApp) -> None:
        self.app = app
        self._runbooks: list[Any] | None = None
        # The openers a plugin's KeySpec may name (besides its own screens and checks).
        self.key_openers: dict[str, Callable[[], None]] = {"layout": self.job_layout, "why": self.why,
                                                           "nccl": self.nccl}
        # Bundled screens that need more than a CheckContext: a form, a runbook, the selection.
        self.screen_openers: dict[tuple[str, str], Callable[[], None]] = {
            ("layout", "layout"): self.layout_command, ("runbooks", "runbook"): self.why, ("nccl", "nccl"): self.nccl}

    # ------------------------------------------------------------ lookups
    def plugin(self, name: str) -> Plugin | None:
        plugin = self.app.plugins.get(name)
        if plugin is None:
            self.app.notify(f"the {name} plugin is not loaded (see `cockpit check` for why)", severity="warning")
        return plugin

    def context(self, plugin: Plugin, progress: Callable[[str], None] | None = None) -> CheckContext | None:
        try:
            return plugin_context(self.app, plugin, progress)
        except CockpitError as exc:
            self.app.notify(f"plugin {plugin.name!r}: {exc}", severity="error", timeout=10)
            return None

    def screen_class(self, plugin: Plugin, name: str) -> type | None:
        path = self.app.plugins.screens(plugin).get(name)
        if not path:
            self.app.notify(f"plugin {plugin.name!r} has no screen {name!r}", severity="error")
            return None
        try:
            return import_object(path, plugin.name)
        except UsageError as exc:
            self.app.notify(str(exc), severity="error", timeout=15)
            return None

    def push(self, plugin: Plugin, make: Callable[[], Any]) -> None:
        """Push the screen ``make()`` builds; a plugin's constructor bug is a notification."""
        try:
            screen = make()
        except Exception as exc:  # noqa: BLE001 - a plugin's bug is reported, not raised
            self.app.notify(f"plugin {plugin.name!r}: screen failed: {type(exc).__name__}: {exc}", severity="error")
            return
        self.app.push_screen(screen)

    # ------------------------------------------------------------ keys and palette
    def open_target(self, plugin: Plugin, target: str) -> None:
        """A palette command's target: one of the plugin's screens or checks."""
        if target in self.app.plugins.screens(plugin):
            opener = self.screen_openers.get((plugin.name, target))
            if opener is not None:
                opener()
            else:
                self.plugin_screen(plugin, target)
        elif (check := next((c for c in plugin.checks if c.name == target), None)) is not None:
            self.run_check(plugin, check)
        else:
            self.app.notify(f"plugin {plugin.name!r}: {target!r} is neither a screen nor a check", severity="error")

    def key(self, key_id: str) -> None:
        """The action of a plugin's key (a KeySpec the registry accepted)."""
        entry = self.app.plugins.keys.get(key_id)
        if entry is None:
            self.app.notify(f"no plugin key {key_id!r}", severity="error")
            return
        opener = self.key_openers.get(entry.spec.opener)
        if opener is not None:
            opener()
        else:
            self.open_target(entry.plugin, entry.spec.opener)

    # ------------------------------------------------------------ layout
    def layout_command(self) -> None:
        """The selected job's layout, or a plan form when no job is selected."""
        if selected_job(self.app) is not None:
            self.job_layout()
        else:
            self.layout_plan()

    def job_layout(self) -> None:
        job = selected_job(self.app)
        if job is None:
            self.app.notify("select a job (jobs view, a job's detail or a GPU it holds) to validate its layout",
                            severity="warning")
            return
        plugin = self.plugin("layout")
        if plugin is None:
            return
        title = f"Layout of job {job.display_id} {clean(job.name, 40)} ({len(job.nodes) or job.node_count} nodes)"

        def chosen(values: dict[str, str] | None) -> None:
            if values is not None:
                self.run_layout(plugin, ["--job", str(job.job_id), *_flags(values)])

        async def open_form() -> None:
            self.app.push_screen(LayoutForm(title, await self.layout_prefill(plugin, job)), callback=chosen)

        self.app.run_worker(open_form(), name="layout-prefill", group="plugin-layout", exclusive=True)

    async def layout_prefill(self, plugin: Plugin, job: Job) -> dict[str, Any]:
        """The form's sizes from the job's own launch line (the layout plugin reads its
        batch script: PP 4 where the argv says so), else infer_parallel's."""
        check = next((c for c in plugin.checks if c.name == "layout"), None)
        ctx = self.context(plugin)
        if check is None or ctx is None or not hasattr(check, "prefill"):
            return infer_parallel(job)
        try:
            return await check.prefill(ctx, job)
        except CockpitError:
            return infer_parallel(job)

    def layout_plan(self) -> None:
        plugin = self.plugin("layout")
        if plugin is None:
            return
        kind, targets = current_targets(self.app)
        nodes = collapse(list(targets)) if kind == "node" and targets else ""

        def chosen(values: dict[str, str] | None) -> None:
            if values is not None:
                self.run_layout(plugin, _flags(values))

        self.app.push_screen(LayoutForm("Plan a layout: nodes and TP/PP/DP", {"nodes": nodes, "pp": 1}, plan=True),
                             callback=chosen)

    def run_layout(self, plugin: Plugin, argv: list[str]) -> None:
        """Run the layout check in a worker, then show the plugin's layout screen."""
        self.app.run_worker(self._layout(plugin, argv), name="layout-check", group="plugin-layout", exclusive=True)

    async def _layout(self, plugin: Plugin, argv: list[str]) -> None:
        check = next((c for c in plugin.checks if c.name == "layout"), None)
        ctx = self.context(plugin)
        if check is None or ctx is None:
            return
        try:
            result = await check.run(ctx, check_args(check, argv))
        except CockpitError as exc:
            self.app.notify(f"layout: {exc}", severity="error", timeout=10)
            return
        cls = self.screen_class(plugin, "layout")
        if cls is not None:
            self.push(plugin, lambda: cls(result))

    # ------------------------------------------------------------ runbooks
    def runbooks(self) -> list[Any]:
        """The runbooks plugin's runbooks (bundled and site), read once."""
        if self._runbooks is None:
            self._runbooks = []
            if self.app.plugins.get("runbooks") is not None:
                loaded = self.load_runbooks()
                self._runbooks = sorted(loaded[0].values(), key=lambda b: b.name) if loaded else []
        return self._runbooks

    def load_runbooks(self) -> tuple[dict[str, Any], list[Any]] | None:
        """(runbooks by name, load problems) from the runbooks plugin; None (and a
        notification naming the plugin) when it fails."""
        try:
            return import_object("cockpit_runbooks:load_runbooks", "runbooks")()
        except Exception as exc:  # noqa: BLE001 - a plugin's bug is a notification, not a crash
            why = str(exc) if isinstance(exc, CockpitError) else f"{type(exc).__name__}: {exc}"
            self.app.notify(f"plugin 'runbooks': cannot load runbooks: {why}", severity="error", timeout=15)
            return None

    def why(self) -> None:
        """A pending job: why it waits; a running job: the hung-job runbook; a node: gpu-xid."""
        kind, targets = current_targets(self.app)
        if not targets:
            self.app.notify("select a job or a node first", severity="warning")
            return
        if kind == "job":
            job = self.job(targets[0])
            if job is not None and job.state == "PENDING":
                from cockpit.tui.screens.whypending import WhyPendingScreen

                self.app.push_screen(WhyPendingScreen(job))
                return
        self.runbook(JOB_RUNBOOK if kind == "job" else NODE_RUNBOOK, kind, targets[0])

    def job(self, ident: str) -> Job | None:
        snap = self.app.snapshot
        return next((j for j in snap.jobs if str(j.job_id) == ident), None) if snap is not None else None

    def runbook(self, name: str, kind: str | None = None, target: str | None = None, mode: str = "propose") -> None:
        """The runbook screen for ``name`` on a job or node (the selection when not given);
        ``mode`` "validate": a node's validation, the resume offered only if all is OK."""
        plugin = self.plugin("runbooks")
        if plugin is None:
            return
        loaded = self.load_runbooks()
        if loaded is None:
            return
        books, problems = loaded
        for pr in problems:
            self.app.notify(f"runbook {pr}", severity="warning", timeout=10)
        book = books.get(name)
        if book is None:
            self.app.notify(f"no runbook {name!r} (known: {', '.join(sorted(books))})", severity="error")
            return
        if target is None:
            kind, targets = current_targets(self.app)
            target = targets[0] if targets else None
        if target is None or kind != book.target:
            self.app.notify(f"runbook {name} needs a {book.target}: select one first", severity="warning")
            return
        ctx = self.context(plugin)
        cls = self.screen_class(plugin, "runbook")
        if ctx is None or cls is None:
            return
        run_context = import_object("cockpit_runbooks.context:RunContext", plugin.name)
        rc = run_context(ctx, job_id=target) if kind == "job" else run_context(ctx, node=target)
        self.push(plugin, lambda: cls(book, rc, mode))

    # ------------------------------------------------------------ NCCL and the rest
    def nccl(self) -> None:
        plugin = self.plugin("nccl")
        if plugin is None:
            return
        ctx = self.context(plugin)
        cls = self.screen_class(plugin, "nccl")
        if ctx is None or cls is None:
            return
        kind, targets = current_targets(self.app)
        nodes = collapse(list(targets)) if kind == "node" and targets else ""
        self.push(plugin, lambda: cls(ctx, nodes=nodes))

    def plugin_screen(self, plugin: Plugin, name: str) -> None:
        """A plugin's screen, constructed with its CheckContext."""
        ctx = self.context(plugin)
        cls = self.screen_class(plugin, name)
        if ctx is not None and cls is not None:
            self.push(plugin, lambda: cls(ctx))

    def run_check(self, plugin: Plugin, check: Any) -> None:
        async def run() -> None:
            ctx = self.context(plugin)
            if ctx is None:
                return
            try:
                result = await check.run(ctx, check_args(check, []))
            except CockpitError as exc:
                self.app.notify(f"check {check.name}: {exc} (run it headless: cockpit check {check.name} --help)",
                                severity="error")
                return
            self.app.push_screen(CheckResultView(result))

        self.app.run_worker(run(), name=f"check-{check.name}", group="plugin-check", exclusive=True)
