"""The TUI declares itself: keys as Bindings with ids (the App's, the main screen's, the
tables', and the plugins' KeySpecs), palette entries through the App's command Provider,
and a broken plugin contribution as a notification naming the plugin."""

from __future__ import annotations

import re
import sys
import types
from importlib.metadata import EntryPoint
from pathlib import Path

from textual.binding import Binding

from cockpit.config import Config, Refresh, Tui
from cockpit.plugins import loader
from cockpit.plugins.api import KeySpec, Plugin
from cockpit.tui.app import CockpitApp
from cockpit.tui.commands import CockpitCommands
from cockpit.tui.plugin_support import normalize_key
from cockpit.tui.screens.detail import DetailScreen
from cockpit.tui.screens.main import MainScreen
from cockpit.tui.widgets.vtable import VTable

from .fakes import NOW, FakeBackend
from .test_pilot import screen_text, settle

README = Path(__file__).resolve().parents[2] / "README.md"
FAST = Config(refresh=Refresh(nodes=0.1, jobs=0.1, partitions=0.1, topology=0.1), tui=Tui(telemetry=False))


def declared(app: CockpitApp) -> dict[str, Binding]:
    """Every key the TUI declares, by binding id: the App's (its plugin keys included),
    the main screen's, the tables' and views', the detail and the history screens'."""
    from cockpit.tui.screens.history import HistoryScreen
    from cockpit.tui.widgets.views import TableView

    out = {}
    bindings = [b for _k, b in app._bindings]
    for cls in (MainScreen, VTable, TableView, DetailScreen, HistoryScreen):
        bindings += list(Binding.make_bindings(cls.BINDINGS))
    for b in bindings:
        if b.id:
            out.setdefault(b.id, b)
    return out


def readme_keys() -> set[str]:
    """The keys of README's TUI key table (``1``-``5`` expanded; ``:view`` commands left out)."""
    text = README.read_text()
    table = text[text.index("| key | what it does |"):]
    table = table[:table.index("\n\n")]
    keys: set[str] = set()
    for line in table.splitlines()[2:]:
        first = line.split("|")[1]
        words = re.findall(r"`([^`]+)`", first)
        for word in words:
            if word.startswith(":"):
                continue
            keys.add(word)
        if "`1`-`5`" in first:
            keys.update("12345")
    return keys


async def test_every_readme_key_is_a_declared_binding_with_an_id():
    app = CockpitApp(FakeBackend(), FAST, clock=lambda: NOW)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        ids = declared(app)
        assert {"cockpit.act", "cockpit.follow", "cockpit.procs", "cockpit.telemetry", "plugin.layout", "plugin.why",
                "view.pulse", "view.jobs", "main.filter", "main.command", "poll.pause", "poll.refresh", "main.keys",
                "table.sort", "table.sort-reverse", "table.mark", "table.open"} <= set(ids)
        by_key = {normalize_key(b.key) for b in ids.values()} | {normalize_key(app.COMMAND_PALETTE_BINDING)}
        wanted = readme_keys()
        assert {"a", "f", "P", "l", "w", "t", "?", "ctrl+p", "Enter", "space", "1", "5"} <= wanted
        glyphs = {"←": "left", "→": "right", "↑": "up", "↓": "down"}  # the README writes arrows as glyphs
        missing = {k for k in wanted
                   if normalize_key(glyphs.get(k, k.lower() if k == "Enter" else k)) not in by_key}
        assert missing == set(), f"README keys with no declared binding: {missing}"


async def test_the_keymap_rebinds_a_declared_key_by_id():
    app = CockpitApp(FakeBackend(), FAST, clock=lambda: NOW)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        app.set_keymap({"plugin.why": "W"})
        await pilot.press("2")
        await settle(pilot, app)
        assert app.main.active_table().select_key("gpu03")
        opened: list[str] = []
        app.openers.open_target = lambda _plugin, target, *_a, **_k: opened.append(target)
        await pilot.press("w")
        await pilot.pause(0.1)
        assert opened == []  # the old key does nothing any more
        await pilot.press("W")
        await pilot.pause(0.1)
        assert opened == ["why"]


def _fake_plugin_module(monkeypatch, name: str, plugin: Plugin) -> EntryPoint:
    module = types.ModuleType(name)
    module.plugin = plugin
    monkeypatch.setitem(sys.modules, name, module)
    return EntryPoint(plugin.name, f"{name}:plugin", loader.GROUP)


async def test_broken_key_specs_and_screens_are_notifications_naming_the_plugin(monkeypatch):
    opened: list[str] = []
    shaky = Plugin(
        name="shaky", description="a third-party plugin with mistakes",
        screens={"status": "cockpit_no_such_module:StatusScreen", "bad": "no-colon-here"},
        commands={"Shaky: status": "status", "Shaky: nowhere": "nowhere"},
        keys=(KeySpec("p", "shaky.pause", "Steal", "takes cockpit's pause key", "status"),
              KeySpec("Y", "shaky.lost", "Lost", "opens nothing", "nowhere"),
              "not a spec",
              KeySpec("Y", "shaky.status", "Status", "the shaky status screen", "status")),
    )
    real = loader.list_entry_points

    def with_shaky(group=loader.GROUP):
        return [*real(group), _fake_plugin_module(monkeypatch, "cockpit_test_shaky", shaky)]

    monkeypatch.setattr(loader, "list_entry_points", with_shaky)
    app = CockpitApp(FakeBackend(), FAST, clock=lambda: NOW)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        notes = [n.message for n in app._notifications]
        for needle in ("'p' (shaky.pause) is taken by cockpit's 'Pause'", "'Y' (shaky.lost) opens 'nowhere'",
                       "'not a spec' is not a KeySpec", "screen 'bad' is 'no-colon-here'",
                       "command 'Shaky: nowhere' names 'nowhere'"):
            assert any(n.startswith("plugin 'shaky': ") and needle in n for n in notes), (needle, notes)
        assert set(app.plugins.keys) == {"plugin.layout", "plugin.why", "shaky.status"}
        # the good key works: its screen fails to import, and says so naming the plugin
        await pilot.press("Y")
        await pilot.pause(0.2)
        notes = [n.message for n in app._notifications]
        assert any(n.startswith("plugin 'shaky': cannot import plugin screen cockpit_no_such_module:StatusScreen")
                   for n in notes), notes
        assert app.screen is app.main
        # p still pauses, and the bundled plugins' keys still work
        await pilot.press("p")
        assert app.poller.paused
        app.openers.open_target = lambda _plugin, target, *_a, **_k: opened.append(target)
        await pilot.press("2")
        await settle(pilot, app)
        await pilot.press("w")
        await pilot.pause(0.1)
        assert opened == ["why"]
        assert "gpu01" in screen_text(app)


async def _hits(provider: CockpitCommands, query: str) -> list[str]:
    return [str(hit.text) for hit in [h async for h in provider.search(query)]]


async def test_the_palette_lists_plugin_commands_through_the_provider():
    app = CockpitApp(FakeBackend(), FAST, clock=lambda: NOW)
    assert CockpitCommands in app.COMMANDS  # declared on the class, beside Textual's own
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        provider = CockpitCommands(app.screen)
        discovered = [h.display for h in [h async for h in provider.discover()]]
        for title in ("NCCL bandwidth test", "Layout: validate a job's parallel layout", "Layout (l)",
                      "Why stuck? (w)", "View: jobs", "Job: cancel job", "Job: processes"):
            assert title in discovered, title
        assert "NCCL bandwidth test" in await _hits(provider, "nccl bandwidth")
        assert any(h.startswith("Layout") for h in await _hits(provider, "layout"))
        # and through Textual's palette itself
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"NCCL bandwidth")
        await pilot.pause(0.5)
        await pilot.press("enter")
        for _ in range(60):
            if type(app.screen).__name__ == "NcclScreen":
                break
            await pilot.pause(0.05)
        assert type(app.screen).__name__ == "NcclScreen"
