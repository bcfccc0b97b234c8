"""Opening what plugins declare, from the TUI: their openers, screens and checks.

The App owns one :class:`PluginOpeners`; plugin keys (KeySpec), palette entries and
``:`` commands call it with the plugin and the name it declares. Nothing here names
a plugin: an opener's :class:`~cockpit.plugins.api.OpenerSpec` says what the
selection must hold, the form to fill first (its fields and defaults, the plugin's
prefill for a job: PP 4 where the job's launch line says so), the check the values
run as flags, and the screen that shows the result, or the plugin's ``build``
function that makes the screen (a runbook for the selection).

Nothing imports a plugin's screen until it is opened; a broken one is a
notification naming the plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from cockpit.errors import CockpitError, UsageError
from cockpit.hostlist import collapse
from cockpit.models import Job, Node
from cockpit.plugins.api import CheckContext, Choice, OpenerSpec, OpenRefused, OpenRequest, Plugin
from cockpit.tui.plugin_support import check_args, import_object, plugin_context
from cockpit.tui.screens.plugin_forms import CheckResultView, PluginForm, form_title
from cockpit.tui.selection import current_targets, selected_job
from cockpit.tui.services import services_for

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp


def _flags(values: Mapping[str, str]) -> list[str]:
    out: list[str] = []
    for key, value in values.items():
        out += [f"--{key.replace('_', '-')}", value]
    return out


@dataclass(frozen=True)
class Selection:
    """What an opener runs for: the selection's kind and targets, and its Job or Node."""

    kind: str
    targets: tuple[str, ...]
    job: Job | None = None
    node: Node | None = None

    @property
    def nodes(self) -> str:
        """The selected nodes as one hostlist ("" when the selection is not nodes)."""
        return collapse(list(self.targets)) if self.kind == "node" and self.targets else ""

    def meets(self, needs: str) -> bool:
        if needs == "job":
            return self.job is not None
        if needs == "node":
            return self.kind == "node" and bool(self.targets)
        if needs == "job-or-node":
            return self.kind in ("job", "node") and bool(self.targets)
        return True


class PluginOpeners:
    """Opens plugin screens for what is under the cursor; every failure is a notification."""

    def __init__(self, app: CockpitApp) -> None:
        self.app = app
        self._choices: dict[tuple[str, str], tuple[Choice, ...]] = {}
        # plugin screen -> the cluster it was opened for (its CheckContext's): what it finds is that cluster's
        self._opened: WeakKeyDictionary[Any, Any] = WeakKeyDictionary()

    # ------------------------------------------------------------ lookups
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
        """Push the screen ``make()`` builds; a plugin's refusal is a warning, its bug an error."""
        link = services_for(self.app)  # the cluster its context was made for, just before
        try:
            screen = make()
        except OpenRefused as exc:
            self.app.notify(str(exc), severity="warning")
            return
        except CockpitError as exc:
            self.app.notify(str(exc), severity="error")
            return
        except Exception as exc:  # noqa: BLE001 - a plugin's bug is reported, not raised
            self.app.notify(f"plugin {plugin.name!r}: screen failed: {type(exc).__name__}: {exc}", severity="error")
            return
        self._opened[screen] = link
        self.app.push_screen(screen)

    def cluster_of(self, message: Any) -> Any:
        """The cluster of the plugin screen that posted ``message`` (Textual's Message
        records the pump it was made in); the one in front for any other sender."""
        sender = message._sender  # noqa: SLF001 - set by Textual's Message for every message
        return self._opened.get(sender, self.app.services) if sender is not None else self.app.services

    def choices(self, plugin: Plugin, spec: OpenerSpec) -> tuple[Choice, ...]:
        """The opener's choices (its runbooks), read once; none (and a notification) when they fail."""
        key = (plugin.name, spec.name)
        if key not in self._choices:
            self._choices[key] = ()
            try:
                self._choices[key] = tuple(import_object(spec.choices, plugin.name)()) if spec.choices else ()
            except Exception as exc:  # noqa: BLE001 - a plugin's bug is a notification, not a crash
                why = str(exc) if isinstance(exc, CockpitError) else f"{type(exc).__name__}: {exc}"
                self.app.notify(f"plugin {plugin.name!r}: cannot list what {spec.name!r} opens: {why}",
                                severity="error", timeout=15)
        return self._choices[key]

    # ------------------------------------------------------------ keys, palette, : commands
    def open_target(self, plugin: Plugin, target: str, choice: str = "", arg: str = "") -> None:
        """What a key, palette command or ``:`` command names: an opener, a screen or a check."""
        spec = self.app.plugins.opener(plugin, target)
        if spec is not None:
            self.open(plugin, spec, choice, arg)
        elif target in self.app.plugins.screens(plugin):
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
        self.open_target(entry.plugin, entry.spec.opener)

    # ------------------------------------------------------------ one opener
    def selection(self, spec: OpenerSpec, arg: str = "") -> Selection:
        """The selection (or the node or job a ``:`` command names), with its Job or Node."""
        if spec.colon_arg in ("node", "job") and arg:
            kind, targets = spec.colon_arg, (arg,)
        else:
            kind, targets = current_targets(self.app)
        snap = services_for(self.app).snapshot  # a detail's cluster's, else the main views'
        job = node = None
        if snap is not None and targets:
            if kind == "job":
                job = next((j for j in snap.jobs if str(j.job_id) == targets[0]), None)
            elif kind == "node":
                node = next((n for n in snap.nodes if n.name == targets[0]), None)
        if spec.needs == "job" and not arg:  # a GPU row stands for the job that holds it
            job = selected_job(self.app)
        return Selection(kind, tuple(targets), job, node)

    def missing(self, spec: OpenerSpec, sel: Selection, arg: str) -> str:
        """Why the selection does not suit the opener ('' when it does)."""
        if spec.colon_arg in ("node", "job") and spec.colon:
            known = sel.job if spec.colon_arg == "job" else sel.node
            if known is None or not sel.meets(spec.needs):
                return (f"{spec.colon[0]}: name a {spec.colon_arg} (:{spec.colon[0]} NAME) or select one"
                        f"{f'; no {spec.colon_arg} {arg!r}' if arg else ''}")
            return ""
        if sel.meets(spec.needs):
            return ""
        return spec.missing or f"select a {spec.needs.replace('-or-', ' or a ')} first"

    def open(self, plugin: Plugin, spec: OpenerSpec, choice: str = "", arg: str = "") -> None:
        """Open ``spec`` for the selection: check what it needs, then its form, check and screen."""
        sel = self.selection(spec, arg)
        if not choice and spec.pending_job and sel.job is not None and sel.job.state == "PENDING":
            from cockpit.tui.screens.whypending import WhyPendingScreen

            self.app.push_screen(WhyPendingScreen(sel.job, services=services_for(self.app)))
            return
        why = "" if choice else self.missing(spec, sel, arg)
        if why and spec.otherwise and self.app.plugins.opener(plugin, spec.otherwise) is not None:
            self.open_target(plugin, spec.otherwise)
            return
        if why:
            self.app.notify(why, severity="warning")
            return
        choice = choice or spec.by_kind.get(sel.kind, "")
        if spec.form is None:
            self.finish(plugin, spec, sel, choice, {})
            return

        def chosen(values: dict[str, str] | None) -> None:
            if values is not None:
                self.finish(plugin, spec, sel, choice, values)

        async def open_form() -> None:
            form = spec.form
            defaults = {f.name: sel.nodes if f.selected_nodes else f.default for f in form.fields}
            if sel.job is not None and form.prefill:
                defaults.update(await self.prefill(plugin, form.prefill, sel.job))
            self.app.push_screen(PluginForm(form_title(form.title, sel.job), form.fields, defaults, form.submit),
                                 callback=chosen)

        self.app.run_worker(open_form(), name=f"{spec.name}-prefill", group=f"plugin-{plugin.name}", exclusive=True)

    async def prefill(self, plugin: Plugin, path: str, job: Job) -> dict[str, Any]:
        """The plugin's starting values for a job's form; {} (the fields' defaults) when it fails."""
        ctx = self.context(plugin)
        if ctx is None:
            return {}
        try:
            return dict(await import_object(path, plugin.name)(ctx, job))
        except CockpitError:
            return {}

    def finish(self, plugin: Plugin, spec: OpenerSpec, sel: Selection, choice: str, values: dict[str, str]) -> None:
        """Run the opener's check (in a worker) when it has one, then show its screen."""
        if not spec.check:
            self.show(plugin, spec, sel, choice, values, None)
            return
        argv = [*(["--job", str(sel.job.job_id)] if sel.job is not None and spec.needs == "job" else []),
                *_flags(values)]
        self.app.run_worker(self._checked(plugin, spec, sel, choice, values, argv), name=f"{spec.name}-check",
                            group=f"plugin-{plugin.name}", exclusive=True)

    async def _checked(self, plugin: Plugin, spec: OpenerSpec, sel: Selection, choice: str,
                       values: dict[str, str], argv: list[str]) -> None:
        check = next((c for c in plugin.checks if c.name == spec.check), None)
        ctx = self.context(plugin)
        if check is None or ctx is None:
            return
        try:
            result = await check.run(ctx, check_args(check, argv))
        except CockpitError as exc:
            self.app.notify(f"{check.name}: {exc}", severity="error", timeout=10)
            return
        self.show(plugin, spec, sel, choice, values, result)

    def show(self, plugin: Plugin, spec: OpenerSpec, sel: Selection, choice: str, values: dict[str, str],
             result: Any) -> None:
        """The opener's screen: the plugin's ``build`` of the request, else its screen class."""
        ctx = self.context(plugin)
        if ctx is None:
            return
        if spec.build:
            try:
                build = import_object(spec.build, plugin.name)
            except UsageError as exc:
                self.app.notify(str(exc), severity="error", timeout=15)
                return
            request = OpenRequest(ctx, sel.kind, sel.targets, sel.job, sel.node, choice, spec.mode, result, values,
                                  warn=lambda msg: self.app.notify(msg, severity="warning", timeout=10))
            self.push(plugin, lambda: build(request))
            return
        cls = self.screen_class(plugin, spec.screen)
        if cls is None:
            return
        if spec.check:
            self.push(plugin, lambda: cls(result))
        else:
            self.push(plugin, lambda: cls(ctx, nodes=sel.nodes) if spec.with_nodes else cls(ctx))

    # ------------------------------------------------------------ screens and checks
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
