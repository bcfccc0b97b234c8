"""The TUI at 3 AM (issue 16), with Pilot: navigation, dialogs, help, copy, the
audit log viewer, why pending, describe, the breadcrumb."""

from __future__ import annotations

import base64

from cockpit.core.audit import read_audit
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.actions import ActionMenu, ActionResults, ConfirmAction, ParamsForm
from cockpit.tui.screens.audit import AuditScreen
from cockpit.tui.screens.detail import JobDetailScreen, NodeDetailScreen
from cockpit.tui.screens.help import KeysScreen, QuitScreen
from cockpit.tui.screens.slurmtext import DescribeScreen
from cockpit.tui.screens.whypending import WhyPendingScreen
from cockpit.tui.viewing import osc52

from .fakes import NOW, FakeProbes, result
from .test_actions_tui import AdminFake, _config, wait_screen
from .test_pilot import screen_text, settle


class Fake(AdminFake):
    def resume_node(self, node):
        self.done.append(("resume", node))


def app_for(tmp_path, backend=None, **kw) -> CockpitApp:
    return CockpitApp(backend or Fake(), _config(tmp_path), clock=lambda: NOW, **kw)


async def drain(pilot, app, node: str) -> ConfirmAction:
    """a -> Drain -> a template -> Enter: the confirmation."""
    await pilot.press("a")
    await wait_screen(pilot, app, ActionMenu)
    await pilot.press("enter")  # Drain is the first node action
    await wait_screen(pilot, app, ParamsForm)
    await pilot.press("down", "enter", "enter")  # the first template, no detail
    return await wait_screen(pilot, app, ConfirmAction)


async def test_empty_drain_reason_is_said_in_the_dialog_which_stays_open(tmp_path):
    app = app_for(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await settle(pilot, app)
        app.main.active_table().select_key("gpu02")
        await pilot.press("a")
        await wait_screen(pilot, app, ActionMenu)
        await pilot.press("enter")
        form = await wait_screen(pilot, app, ParamsForm)
        await pilot.press("enter", "enter")  # free text, and nothing typed
        await settle(pilot, app)
        assert app.screen is form and "drain node needs a reason" in screen_text(app)


async def test_confirm_names_the_jobs_and_what_a_drain_leaves_running_then_marks_clear(tmp_path):
    backend = Fake()
    app = app_for(tmp_path, backend)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await settle(pilot, app)
        table = app.main.active_table()
        table.select_key("gpu01")
        await pilot.press("space")  # gpu01 marked; the cursor moves to gpu02
        await pilot.press("space")
        assert len(table.marked_keys()) == 2 and "marked: 2" in screen_text(app)
        await drain(pilot, app, "gpu01")
        text = screen_text(app)
        assert "1 job(s) keep running (a drain lets them finish): 101 alice llama-70b" in text
        assert "Reason=Xid 79: GPU fallen off the bus" in text
        await pilot.press("y")
        results = await wait_screen(pilot, app, ActionResults)
        assert "marks cleared" in screen_text(app)
        results.dismiss(None)
        await settle(pilot, app)
        assert table.marked_keys() == () and "marked:" not in screen_text(app)
    assert [d[:2] for d in backend.done] == [("drain", "gpu01"), ("drain", "gpu02")]


async def test_job_confirmation_shows_user_name_and_gpus(tmp_path):
    app = app_for(tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        app.main.active_table().select_key(101)
        await pilot.press("a")
        (await wait_screen(pilot, app, ActionMenu)).dismiss("cancel")
        await wait_screen(pilot, app, ConfirmAction)
        assert "101  alice  llama-70b  8 GPU(s)  running, running 2h00m" in screen_text(app)


async def test_audit_view_shows_the_drain_and_resumes_through_the_gate(tmp_path):
    backend = Fake()
    app = app_for(tmp_path, backend)
    async with app.run_test(size=(140, 36)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await settle(pilot, app)
        app.main.active_table().select_key("gpu02")
        await drain(pilot, app, "gpu02")
        await pilot.press("y")
        (await wait_screen(pilot, app, ActionResults)).dismiss(None)
        await settle(pilot, app)
        await pilot.press("A")
        await wait_screen(pilot, app, AuditScreen)
        await settle(pilot, app, 0.3)
        text = screen_text(app)
        assert "drain" in text and "gpu02" in text and "done" in text and "Xid 79" in text
        assert "a: resume this node (gpu02)" in text
        await pilot.press("a")
        confirm = await wait_screen(pilot, app, ConfirmAction)
        assert confirm.plan.spec.name == "resume" and confirm.plan.targets == ("gpu02",)
        await pilot.press("y")
        (await wait_screen(pilot, app, ActionResults)).dismiss(None)
        await wait_screen(pilot, app, AuditScreen)
        await settle(pilot, app, 0.3)
        assert "resume" in screen_text(app)
    assert backend.done[-1] == ("resume", "gpu02")
    assert [r["action"] for r in read_audit(tmp_path / "audit.jsonl")] == ["drain", "resume"]


async def test_follow_up_is_refused_read_only_and_audited(tmp_path):
    (tmp_path / "audit.jsonl").write_text(
        '{"action": "drain", "kind": "node", "target": "gpu02", "targets": ["gpu02"], "result": "done", '
        '"epoch": 1, "invocation": "a", "step": 0, "argv": ["scontrol", "update"], "params": {}}\n')
    app = app_for(tmp_path, read_only=True)
    async with app.run_test(size=(140, 36)) as pilot:
        await settle(pilot, app)
        await pilot.press("A")
        await wait_screen(pilot, app, AuditScreen)
        await settle(pilot, app, 0.3)
        await pilot.press("a")
        await settle(pilot, app, 0.3)
        assert isinstance(app.screen, AuditScreen)
    assert read_audit(tmp_path / "audit.jsonl")[-1]["result"] == "refused"


async def test_quit_asks_first_and_detail_q_goes_back(tmp_path):
    app = app_for(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        await pilot.press("enter")
        await wait_screen(pilot, app, JobDetailScreen)
        await pilot.press("q")  # back
        await settle(pilot, app)
        assert app.screen is app.main
        await pilot.press("q")  # asks
        await wait_screen(pilot, app, QuitScreen)
        await pilot.press("n")
        await settle(pilot, app)
        assert app.screen is app.main and app.is_running
        await pilot.press("q")
        await wait_screen(pilot, app, QuitScreen)
        await pilot.press("y")
        await pilot.pause(0.2)
    assert not app.is_running


async def test_r_while_paused_fetches_once_and_stays_paused(tmp_path):
    backend = Fake()
    app = app_for(tmp_path, backend)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("p")
        await settle(pilot, app, 0.4)
        before = backend.calls["jobs"]
        await settle(pilot, app, 0.4)
        assert backend.calls["jobs"] == before  # paused
        await pilot.press("r")
        await settle(pilot, app, 0.4)
        assert backend.calls["jobs"] == before + 1 and app.poller.paused
        assert "PAUSED" in screen_text(app)


async def test_enter_enter_reaches_the_node_and_the_breadcrumb_says_where(tmp_path):
    app = app_for(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        await pilot.press("enter")
        await wait_screen(pilot, app, JobDetailScreen)
        await pilot.press("enter")
        await wait_screen(pilot, app, NodeDetailScreen)
        await settle(pilot, app)
        assert app.screen.key == "gpu01" and "Jobs › 101 › gpu01" in screen_text(app)
        assert "250/500 GiB allocated" in screen_text(app)  # the units of the nodes view


async def test_a_job_id_that_never_existed_is_not_called_finished(tmp_path):
    app = app_for(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app, 0.4)
        await pilot.press("colon", *"job 99999", "enter")
        await settle(pilot, app)
        text = screen_text(app)
        assert "not known to Slurm: the newest job is" in text and "any more" not in text


async def test_keys_screen_lists_the_current_view_first_and_every_app_key(tmp_path):
    app = app_for(tmp_path)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("5", "question_mark")
        keys = await wait_screen(pilot, app, KeysScreen)
        titles = [t for t, _rows in keys.sections]
        assert titles[0] == "This view: Jobs" and titles[1] == "Everywhere"
        view = dict(keys.sections[0][1])
        assert {"space", "u", "enter", "s", "right"} <= set(view) or {"space", "u", "⏎", "s", "→"} <= set(view)
        every = dict(keys.sections[1][1])
        assert {"a", "f", "P", "t", "y", "d", "L", "A", "w", "l"} <= set(every)


async def test_w_on_a_pending_job_says_why_it_waits(tmp_path):
    app = app_for(tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        app.main.active_table().select_key(103)
        await pilot.press("w")
        await wait_screen(pilot, app, WhyPendingScreen)
        await settle(pilot, app, 0.3)
        text = screen_text(app)
        assert "Slurm's reason: Resources" in text and "not enough of what it asks for" in text
        assert "2 node(s) x 8 GPU(s)" in text and "Free now in its partitions" in text


async def test_copy_sends_only_the_base64_of_the_sanitized_value(tmp_path):
    app = app_for(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        written: list[str] = []
        app._driver.write = written.append  # what the terminal would get
        await pilot.press("2")
        await settle(pilot, app)
        app.main.active_table().select_key("gpu03")
        await pilot.press("y")
        assert written[-1] == osc52("gpu03") and app.clipboard == "gpu03"
        app.copy_value("job\x1b]52;c;ZXZpbA==\x07[red]x\x1b[31m", "a name")
        payload = written[-1][len("\x1b]52;c;"):-1]
        assert written[-1].startswith("\x1b]52;c;") and written[-1].endswith("\a") and "\x1b" not in payload
        decoded = base64.b64decode(payload).decode()
        assert "\x1b" not in decoded and "\x07" not in decoded and decoded.startswith("job")


async def test_describe_shows_what_slurm_says(tmp_path):
    said = "JobId=101 JobName=llama-70b\n   UserId=alice(1000) JobState=RUNNING Reason=None\n"
    probes = FakeProbes(lambda node, argv: result(argv, said if argv[:3] == ["scontrol", "show", "job"] else ""))
    app = app_for(tmp_path, probes=probes)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        await pilot.press("d")
        await wait_screen(pilot, app, DescribeScreen)
        await settle(pilot, app, 0.3)
        text = screen_text(app)
        assert "scontrol show job 101" in text and "UserId=alice(1000) JobState=RUNNING" in text
        assert ("", ("scontrol", "show", "job", "101")) in probes.calls
