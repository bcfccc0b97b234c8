"""Plugin screens in the TUI (Pilot): palette entries (the App's command Provider),
the plugins' declared keys (job row -> layout, node row -> runbook), read-only
refusal of plugin actions, and broken plugins and contributions as notifications."""

from __future__ import annotations

from importlib.metadata import EntryPoint

from cockpit.config import Config, General, Refresh, Tui
from cockpit.core.audit import read_audit
from cockpit.plugins import loader
from cockpit.tui.app import CockpitApp
from cockpit.tui.commands import cockpit_commands
from cockpit.tui.screens.actions import ConfirmAction
from cockpit.tui.screens.plugin_forms import PluginForm

from .fakes import NOW, FakeBackend
from .test_pilot import screen_text, settle


class ActingFake(FakeBackend):
    """The fake cluster with the demo backend's admin methods, so the actions gate exists."""

    def __init__(self):
        super().__init__()
        self.done: list[tuple] = []

    def action_executor(self, config):
        from cockpit.backends._demo.executor import DemoExecutor

        return DemoExecutor(self)

    def probe_runner(self, config):
        from cockpit.remote.probes import NoProbes

        return NoProbes("the fake cluster has no nodes to ask")

    def drain_node(self, node, reason):
        self.done.append(("drain", node, reason))

    def cancel_job(self, job):
        self.done.append(("cancel", job))

    def submit_batch(self, script):
        self.done.append(("submit", script))
        return 4242


def _config(tmp_path, **general):
    return Config(general=General(audit_log=str(tmp_path / "audit.jsonl"), **general),
                  refresh=Refresh(nodes=0.1, jobs=0.1, partitions=0.1, topology=0.1), tui=Tui(telemetry=False))


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


async def wait_for(pilot, cond, tries=100, what="condition"):
    for _ in range(tries):
        value = cond()
        if value:
            return value
        await pilot.pause(0.05)
    raise AssertionError(f"{what} never became true")


async def wait_screen_named(pilot, app, name, tries=100):
    screen = await wait_for(pilot, lambda: app.screen if type(app.screen).__name__ == name else None, tries,
                            f"screen {name} (on {type(app.screen).__name__})")
    await pilot.pause(0.1)  # composed and mounted
    return screen


async def test_palette_lists_every_plugin_command_and_opens_the_nccl_screen(tmp_path):
    app = CockpitApp(ActingFake(), _config(tmp_path), clock=lambda: NOW)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        titles = {c.title for c in cockpit_commands(app)}
        loaded = loader.load_plugins()
        for plugin in loaded.plugins.values():
            assert set(plugin.commands) <= titles, plugin.name
        assert {"Layout: plan (nodes + TP/PP/DP)", "Runbook: GPU Xid / hardware fault (gpu-xid)",
                "Runbook: Hung job / NCCL timeout (hung-job)"} <= titles
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"NCCL bandwidth")
        await pilot.pause(0.5)
        await pilot.press("enter")
        screen = await wait_screen_named(pilot, app, "NcclScreen")
        assert screen.context.actions.read_only is False and screen.context.simulated is False


async def test_job_row_opens_the_layout_form_then_the_layout_screen(tmp_path):
    app = CockpitApp(ActingFake(), _config(tmp_path), clock=lambda: NOW)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        assert app.main.active_table().select_key(101)
        await pilot.press("l")
        form = await wait_for(pilot, lambda: isinstance(app.screen, PluginForm) and app.screen, what="the layout form")
        assert form.query_one("#f-tp").value == "8"  # job 101 holds 8 GPUs on gpu01: TP inside the node
        await pilot.press("enter")
        screen = await wait_screen_named(pilot, app, "LayoutScreen")
        data = screen.result["data"]
        assert [n["name"] for n in data["nodes"]] == ["gpu01"]
        assert screen.result["status"] == "OK", screen.result
        assert "TP" in screen.result["summary"] or "tp" in screen.result["summary"].lower()
        await pilot.press("escape")
        # a TP that does not divide the node's 8 GPUs is CRIT, from the same form
        await pilot.press("l")
        form = await wait_for(pilot, lambda: isinstance(app.screen, PluginForm) and app.screen, what="the layout form")
        form.query_one("#f-tp").value = "3"
        form.query_one("#f-dp").value = ""
        await pilot.press("enter")
        screen = await wait_screen_named(pilot, app, "LayoutScreen")
        assert screen.result["status"] == "CRIT"
        assert "CRIT" in screen_text(app)


async def test_node_row_opens_the_gpu_xid_runbook_and_job_row_the_hung_job_runbook(tmp_path):
    app = CockpitApp(ActingFake(), _config(tmp_path), clock=lambda: NOW)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await settle(pilot, app)
        assert app.main.active_table().select_key("gpu03")
        await pilot.press("w")
        screen = await wait_screen_named(pilot, app, "RunbookScreen")
        assert screen.book.name == "gpu-xid" and screen.rc.node == "gpu03" and screen.mode == "propose"
        await wait_for(pilot, lambda: screen.outcomes, what="a runbook step")
        assert "GPU Xid / hardware fault" in screen_text(app)
        await pilot.press("escape")
        await pilot.press("5")
        await settle(pilot, app)
        assert app.main.active_table().select_key(101)
        await pilot.press("enter")  # from the job's detail screen too
        await pilot.pause(0.2)
        await pilot.press("w")
        screen = await wait_screen_named(pilot, app, "RunbookScreen")
        assert screen.book.name == "hung-job" and screen.rc.job_id == "101"


async def test_read_only_refuses_plugin_actions_and_audits_the_refusal(tmp_path):
    backend = ActingFake()
    app = CockpitApp(backend, _config(tmp_path), clock=lambda: NOW, read_only=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        app.openers.open_target(app.plugins.get("nccl"), "nccl")
        screen = await wait_screen_named(pilot, app, "NcclScreen")
        screen.query_one("#nodes").value = "gpu[01-02]"
        screen.action_start()
        await wait_for(pilot, lambda: "read-only mode" in str(screen.query_one("#verdict").render()),
                       what="the refusal")
        assert not isinstance(app.screen, ConfirmAction)  # refused before asking
        await pilot.press("escape")
        await pilot.press("2")
        await settle(pilot, app)
        app.main.active_table().select_key("gpu03")
        await pilot.press("w")
        rb = await wait_screen_named(pilot, app, "RunbookScreen")
        await pilot.press("x")
        await pilot.pause(0.2)
        assert rb.mode == "propose" and app.screen is rb  # no acting run started
    assert backend.done == []
    audit = read_audit(tmp_path / "audit.jsonl")
    assert [(r["action"], r["result"]) for r in audit] == [("submit", "refused"),
                                                           ("runbooks.gpu-xid", "refused")]
    assert audit[0]["targets"] == ["gpu[01-02]"]


async def test_plugin_actions_ask_before_running(tmp_path):
    """Plugins' actions in the TUI pass the confirming gate: "n" runs nothing, "y" runs it."""
    from cockpit.backends._demo.executor import DemoExecutor
    from cockpit.core.actions import Actions, Declined
    from cockpit.tui.plugin_support import dialog_confirm
    from cockpit.tui.screens.actions import ConfirmAction

    backend = ActingFake()
    app = CockpitApp(backend, _config(tmp_path), clock=lambda: NOW)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        gate = Actions(DemoExecutor(backend), confirm=dialog_confirm(app))
        plan = gate.plan("drain", ["gpu03"], reason="Xid 79: GPU fallen off the bus")
        task = app.run_worker(gate.execute(plan), exit_on_error=False)
        # the dialog is the screen before its text is composed: wait for the text itself
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmAction)
                       and "scontrol update NodeName=gpu03 State=DRAIN" in screen_text(app), what="confirmation")
        await pilot.press("n")
        await wait_for(pilot, lambda: task.is_finished, what="the declined worker to end")
        assert isinstance(task.error, Declined) and backend.done == []
        task = app.run_worker(gate.execute(plan), exit_on_error=False)
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmAction), what="confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: backend.done, what="the drain")
    assert backend.done == [("drain", "gpu03", "Xid 79: GPU fallen off the bus")]


async def test_a_broken_plugin_entry_point_is_a_notification(tmp_path, monkeypatch):
    real = loader.list_entry_points

    def with_broken(group=loader.GROUP):
        return [*real(group), EntryPoint("broken", "cockpit_no_such_plugin_module:plugin", group)]

    monkeypatch.setattr(loader, "list_entry_points", with_broken)
    app = CockpitApp(ActingFake(), _config(tmp_path), clock=lambda: NOW)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        assert any("plugin 'broken' not loaded" in n and "cockpit_no_such_plugin_module" in n for n in notes(app))
        titles = {c.title for c in cockpit_commands(app)}
        assert "NCCL bandwidth test" in titles  # the others still load
        await pilot.press("2")
        await settle(pilot, app)
        assert "gpu01" in screen_text(app)  # and the app keeps working


async def test_nccl_launch_is_confirmed_and_audited_and_keys_are_in_help(tmp_path):
    from cockpit.tui.screens.help import KeysScreen

    app = CockpitApp(ActingFake(), _config(tmp_path), clock=lambda: NOW)
    async with app.run_test(size=(140, 50)) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, KeysScreen), what="the keys screen")
        await pilot.pause(0.1)
        help_text = screen_text(app)
        assert "why is this stuck?" in help_text and "layout of the selected job" in help_text
        await pilot.press("escape")
        await pilot.press("2")
        await settle(pilot, app)
        table = app.main.active_table()
        for node in ("gpu01", "gpu02"):
            table.select_key(node)
            await pilot.press("space")
        app.openers.open_target(app.plugins.get("nccl"), "nccl")
        screen = await wait_screen_named(pilot, app, "NcclScreen")
        assert screen.query_one("#nodes").value == "gpu[01-02]"  # the marked nodes
        launched: list[str] = []
        backend = app.backend
        screen.action_start()  # the gate's own dialog: the exact argv and the script
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmAction), what="launch confirmation")
        await pilot.pause(0.1)
        text = screen_text(app)
        assert "sbatch --parsable" in text and "gpu[01-02]" in text and "#SBATCH" in text
        await pilot.press("n")
        await wait_for(pilot, lambda: "declined" in str(screen.query_one("#verdict").render()), what="declined")
        assert backend.done == [] and read_audit(tmp_path / "audit.jsonl") == []
        screen.action_start()
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmAction), what="launch confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: backend.done, what="the submission")
    assert backend.done[0][0] == "submit" and "--nodelist=gpu[01-02]" in backend.done[0][1]
    recs = read_audit(tmp_path / "audit.jsonl")
    assert [(r["action"], r["argv"][0], r["result"]) for r in recs] == [("submit", "mkdir", "done"), ("submit", "sbatch", "done")]
    assert recs[1]["targets"] == ["gpu[01-02]"] and recs[1]["value"] == "4242" and "#SBATCH" in recs[1]["stdin"]

