"""A third-party plugin's declared openers get their key, palette entries, ``:`` command
and form in the TUI with nothing in tui/ naming it (Pilot, on the fake cluster): the
form's defaults, the check run with its values as flags, the screen shown with the
result; a ``build`` function handed the request; a bad spec a warning naming the plugin."""

from __future__ import annotations

import sys
import types
from importlib.metadata import EntryPoint

from textual.screen import Screen
from textual.widgets import Static

from cockpit.plugins import loader
from cockpit.plugins.api import (CheckResult, Choice, FormField, FormSpec, KeySpec, OpenerSpec, OpenRefused,
                                 Plugin, Severity)
from cockpit.tui.app import CockpitApp
from cockpit.tui.commands import cockpit_commands, completions, run_colon
from cockpit.tui.screens.plugin_forms import PluginForm

from .fakes import NOW, FakeBackend
from .test_declared import FAST
from .test_pilot import settle
from .test_plugins_tui import wait_for

MODULE = "cockpit_test_acme"


class FitCheck:
    name = "fit"
    description = "does the job fit"

    def add_arguments(self, parser):
        parser.add_argument("--job")
        parser.add_argument("--size")

    async def run(self, ctx, args):
        return CheckResult("fit", Severity.OK, f"job {args.job} size {args.size}", data={"job": args.job})


class FitScreen(Screen):
    def __init__(self, result):
        super().__init__()
        self.result = result

    def compose(self):
        yield Static(self.result.summary)


class ProbeScreen(Screen):
    def __init__(self, request):
        super().__init__()
        self.request = request

    def compose(self):
        yield Static(f"{self.request.choice} on {self.request.target}")


def build(request):
    if request.choice == "refused":
        raise OpenRefused("acme: not on this node")
    return ProbeScreen(request)


PLUGIN = Plugin(
    name="acme", description="a third-party plugin with openers", checks=(FitCheck(),),
    screens={"fit": f"{MODULE}:FitScreen"},
    keys=(KeySpec("K", "acme.fit", "Fit", "fit the selected job (acme)", "fit"),),
    openers=(
        OpenerSpec("fit", "Acme: fit the selected job", "the fit form", needs="job", missing="acme: select a job",
                   form=FormSpec("Fit job {job_id} ({job_nodes} nodes)", (FormField("size", "size", 2),
                                                                           FormField("nodes", "nodes", selected_nodes=True))),
                   check="fit", screen="fit"),
        OpenerSpec("probe", help="an acme probe: :acme NAME", needs="node", build=f"{MODULE}:build",
                   choices=f"{MODULE}:choices", by_kind={"node": "one"}, colon=("acme",), colon_arg="choice"),
        OpenerSpec("broken", needs="somewhere", screen="fit"),
    ),
)


def _with_acme(monkeypatch):
    module = types.ModuleType(MODULE)
    module.plugin, module.FitScreen, module.build = PLUGIN, FitScreen, build
    module.choices = lambda: (Choice("one", "Acme: probe one", "the first"), Choice("refused", "Acme: refused"))
    monkeypatch.setitem(sys.modules, MODULE, module)
    real = loader.list_entry_points
    monkeypatch.setattr(loader, "list_entry_points",
                        lambda group=loader.GROUP: [*real(group), EntryPoint("acme", f"{MODULE}:plugin", group)])


async def test_a_third_party_opener_gets_its_key_form_check_and_screen(monkeypatch):
    _with_acme(monkeypatch)
    app = CockpitApp(FakeBackend(), FAST, clock=lambda: NOW)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        notes = [n.message for n in app._notifications]
        assert any(n.startswith("plugin 'acme': opener 'broken': needs 'somewhere'") for n in notes), notes
        assert set(app.plugins.openers(app.plugins.get("acme"))) == {"fit", "probe"}
        await pilot.press("K")  # nothing selected on the pulse: the spec's own warning
        await wait_for(pilot, lambda: any(n.message == "acme: select a job" for n in app._notifications),
                       what="the missing-job warning")
        await pilot.press("5")
        await settle(pilot, app)
        assert app.main.active_table().select_key(101)
        await pilot.press("K")
        form = await wait_for(pilot, lambda: isinstance(app.screen, PluginForm) and app.screen, what="the form")
        assert form.title_text == "Fit job 101 (1 nodes)"
        assert form.query_one("#f-size").value == "2" and form.query_one("#f-nodes").value == ""
        form.query_one("#f-size").value = "5"
        await pilot.press("enter")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, FitScreen) and app.screen, what="FitScreen")
        assert screen.result.summary == "job 101 size 5"


async def test_a_third_party_opener_with_choices_gets_palette_entries_and_a_colon_command(monkeypatch):
    _with_acme(monkeypatch)
    app = CockpitApp(FakeBackend(), FAST, clock=lambda: NOW)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        titles = {c.title for c in cockpit_commands(app)}
        assert {"Acme: fit the selected job", "Acme: probe one", "Acme: refused", "Fit (K)"} <= titles
        assert completions(app, "acme ") == ["acme one", "acme refused"]
        await pilot.press("2")
        await settle(pilot, app)
        assert app.main.active_table().select_key("gpu03")
        assert run_colon(app, "acme refused") == ""
        await wait_for(pilot, lambda: any(n.message == "acme: not on this node" for n in app._notifications),
                       what="the refusal as a warning")
        assert app.screen is app.main
        run_colon(app, "acme")  # no choice named: by_kind's for a node
        screen = await wait_for(pilot, lambda: isinstance(app.screen, ProbeScreen) and app.screen, what="ProbeScreen")
        assert (screen.request.choice, screen.request.kind, screen.request.target) == ("one", "node", "gpu03")
        assert screen.request.node is not None and screen.request.node.name == "gpu03"
