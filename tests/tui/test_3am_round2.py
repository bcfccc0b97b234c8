"""The TUI at 3 AM, round 2 (issue 25), with Pilot on the demo at 80x24 and 160x48:
the step that ``x`` runs is on screen and highlighted before its dialog asks; every
confirmation is the one dialog (user, name, GPUs, the jobs a drain leaves running);
a declined step reads "declined"; after the last step the result is shown."""

from __future__ import annotations

import pytest

from cockpit.backends.demo import DemoBackend
from cockpit.config import Config, General
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.actions import ConfirmAction
from cockpit.tui.screens.detail import JobDetailScreen
from tuiwait import runbook_step, screen_text, wait_for_text, wait_until

from .test_actions_tui import wait_screen
from .test_pilot import settle

FROZEN = 1_750_000_000.0
SIZES = [(80, 24), (160, 48)]


def demo(tmp_path) -> tuple[CockpitApp, DemoBackend]:
    clock = lambda: FROZEN  # noqa: E731
    backend = DemoBackend(seed=7, clock=clock)
    app = CockpitApp(backend, Config(general=General(audit_log=str(tmp_path / "audit.jsonl"), demo_audit_log=str(tmp_path / "demo-audit.jsonl"))), clock=clock)
    return app, backend


async def hung_job_runbook(pilot, app, backend):
    """From a cold start: the Pulse's first suspect is the hung job; ``w`` opens its runbook."""
    from cockpit_runbooks.screen import RunbookScreen

    pulse = app.main.pulse
    await wait_until(pilot, lambda: backend.hung_job_id in (pulse.suspects.data.rows if pulse.suspects.data else {}),
                     "the hung job among the suspects")
    await settle(pilot, app)
    await pilot.press("w")
    book = await wait_screen(pilot, app, RunbookScreen)
    await wait_until(pilot, lambda: book.finished, "the propose run to end", timeout=60)
    return book


async def next_confirm(pilot, app, previous=None) -> ConfirmAction:
    return await wait_until(pilot, lambda: app.screen if isinstance(app.screen, ConfirmAction)
                            and app.screen is not previous else None, "the next confirmation", timeout=60)


def details(dialog: ConfirmAction) -> str:
    return "\n".join(t.plain for t in dialog.details)


@pytest.mark.parametrize("size", SIZES)
async def test_x_shows_each_step_before_its_dialog_and_the_result_after_the_last(tmp_path, size):
    app, backend = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        await hung_job_runbook(pilot, app, backend)
        await pilot.press("x")
        await wait_until(pilot, lambda: getattr(app.screen, "mode", "") == "act", "the acting run")
        book = app.screen
        job = app.snapshot.job(backend.hung_job_id)

        signal = await next_confirm(pilot, app)
        assert book.current == "dump" and book.step_in_view()  # on screen, highlighted (▶ now)
        text = await wait_for_text(pilot, "Ask every rank for a flight-recorder dump")
        assert signal.origin.startswith(f"runbook hung-job, {runbook_step('hung-job', 'dump')}: Ask every rank")
        assert f"{job.display_id}  {job.user}  {job.name}  {job.gpu_count} GPU(s)" in text
        await pilot.press("n")

        drain = await next_confirm(pilot, app, signal)
        assert book.current == "drain-straggler" and book.step_in_view()
        assert book.outcomes["dump"].status == "declined"
        assert drain.plan.targets == (backend.straggler_node,)
        assert f"keep running (a drain lets them finish): {job.display_id} {job.user} {job.name}" in details(drain)
        await pilot.press("y")

        requeue = await next_confirm(pilot, app, drain)
        assert book.current == "requeue" and book.step_in_view()
        assert f"{job.display_id}  {job.user}  {job.name}  {job.gpu_count} GPU(s)" in details(requeue)
        await pilot.press("y")

        await wait_until(pilot, lambda: book.finished, "the acting run to end", timeout=60)
        await settle(pilot, app)
        text = " ".join(screen_text(app).split())  # the result line may wrap at 80 columns
        assert "Result:" in text and "drain-straggler: done" in text and "requeue: done" in text
        assert "dump: declined" in text and "action-f" not in text

        # the requeued job, pending again, no longer shows the Pulse's old suspect evidence
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.main, "back on the main screen")
        await wait_until(pilot, lambda: app.snapshot.job(job.job_id).state == "PENDING", "the job pending again")
        await pilot.press("colon", *f"job {job.job_id}", "enter")
        detail = await wait_screen(pilot, app, JobDetailScreen)
        await wait_until(pilot, lambda: "PENDING" in str(detail.query_one("#detail-title").render()).upper(),
                         "the detail of the pending job")
        assert "output silent" not in screen_text(app) and "suspect" not in screen_text(app)


@pytest.mark.parametrize("size", SIZES)
async def test_colon_names_match_the_palette_and_open_their_screens(tmp_path, size):
    from cockpit.tui.commands import COLON_COMMANDS, cockpit_commands
    from cockpit.tui.screens.history import HistoryScreen
    from cockpit.tui.screens.reservations import ReservationsScreen
    from cockpit.tui.screens.utilization import UtilizationScreen

    app, _backend = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        helps = " ".join(c.help for c in cockpit_commands(app))
        assert all(f"(:{c.name})" in helps for c in COLON_COMMANDS if c.title)  # the palette says each : name
        for word, screen in (("history", HistoryScreen), ("utilization", UtilizationScreen),
                             ("reservations", ReservationsScreen)):
            await pilot.press("colon", *word, "enter")
            await wait_screen(pilot, app, screen)
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is app.main, "back on the main screen")


@pytest.mark.parametrize("size", SIZES)
async def test_colon_works_on_every_screen_not_only_the_main_one(tmp_path, size):
    """#25: `:` did nothing outside the main screen. On a job's detail it opens the same
    line (Tab completes there too), and `:history` opens History over that screen."""
    from cockpit.tui.screens.command import CommandScreen
    from cockpit.tui.screens.history import HistoryScreen

    app, backend = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        app.push_screen(JobDetailScreen(backend.hung_job_id, services=app.services))
        detail = await wait_screen(pilot, app, JobDetailScreen)
        await pilot.press("colon")
        line_screen = await wait_screen(pilot, app, CommandScreen)
        await pilot.press(*"hist", "tab")
        assert line_screen.query_one("#command").value == "history "
        await pilot.press("enter")
        await wait_screen(pilot, app, HistoryScreen)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is detail, "back on the job's detail")
        await pilot.press("colon", *"nosuch", "enter")
        await wait_until(pilot, lambda: app.screen is detail, "the line closed")
        await wait_until(pilot, lambda: any("unknown command :nosuch" in str(n.message) for n in app._notifications),
                         "the unknown command said")


@pytest.mark.parametrize("size", SIZES)
async def test_tab_completes_commands_job_ids_and_nodes(tmp_path, size):
    from cockpit.tui.screens.detail import JobDetailScreen, NodeDetailScreen

    app, backend = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        line = app.main.query_one("#command")
        await pilot.press("colon", *"util", "tab")
        assert line.value == "utilization "
        await pilot.press("escape")
        await pilot.press("colon", *"re", "tab")  # several: listed under the line
        await wait_for_text(pilot, "refresh  reservations")
        await pilot.press("escape")
        job = str(backend.hung_job_id)
        others = [str(j.job_id) for j in app.snapshot.jobs if str(j.job_id) != job]
        short = next(job[:n] for n in range(1, len(job) + 1) if not any(o.startswith(job[:n]) for o in others))
        await pilot.press("colon", *f"job {short}", "tab")
        assert line.value == f"job {job}"
        await pilot.press("enter")
        assert (await wait_screen(pilot, app, JobDetailScreen)).key == backend.hung_job_id
        await pilot.press("escape")
        node = backend.straggler_node
        names = [n.name for n in app.snapshot.nodes if n.name != node]
        short = next(node[:n] for n in range(1, len(node) + 1) if not any(o.startswith(node[:n]) for o in names))
        await pilot.press("colon", *f"node {short}", "tab")
        assert line.value == f"node {node}"
        await pilot.press("enter")
        assert (await wait_screen(pilot, app, NodeDetailScreen)).key == node


@pytest.mark.parametrize("size", SIZES)
async def test_colon_q_and_ctrl_c_ask_as_q_does(tmp_path, size):
    from cockpit.tui.screens.help import QuitScreen

    app, _backend = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await pilot.press("colon", "q", "enter")
        await wait_screen(pilot, app, QuitScreen)
        assert app.is_running
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is app.main, "back on the main screen")
        await pilot.press("ctrl+c")
        await wait_screen(pilot, app, QuitScreen)
        assert "ctrl+q" not in screen_text(app) and app.is_running
        await pilot.press("ctrl+c")  # a second one quits
        await wait_until(pilot, lambda: not app.is_running, "cockpit to quit")


@pytest.mark.parametrize("size", SIZES)
async def test_question_mark_works_on_the_runbook_screen(tmp_path, size):
    from cockpit.tui.screens.help import KeysScreen

    app, backend = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        await hung_job_runbook(pilot, app, backend)
        await pilot.press("question_mark")
        keys = await wait_screen(pilot, app, KeysScreen)
        assert any("Do proposed actions" in what for _key, what in keys.rows)


@pytest.mark.parametrize("size", SIZES)
async def test_P_one_line_per_process_header_fixed_filter_and_the_straggler_highlighted(tmp_path, size):
    from textual.widgets import DataTable

    from cockpit.tui.screens.jobprocs import STRAGGLER, JobProcsScreen

    app, backend = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        await hung_job_runbook(pilot, app, backend)  # it names the straggler rank
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.main, "back on the Pulse")
        await pilot.press("P")
        screen = await wait_screen(pilot, app, JobProcsScreen)
        table = screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count > 1, "the processes")
        count = sum(len(p) for p in screen.procs.values())
        assert table.row_count == count  # one row per process, none wrapped
        assert all(h == 1 for h in (table.rows[k].height for k in table.rows))
        table.move_cursor(row=table.row_count - 1)  # scrolled to the end: the header stays
        await pilot.pause()
        assert table.show_header and "command" in screen_text(app)
        rank = str(backend.straggler_rank)
        await pilot.press("slash", *f"{backend.straggler_node} ", *rank)
        await wait_until(pilot, lambda: table.row_count < count, "the filter applied")
        straggler = [table.get_row(k) for k in table.rows if table.get_row(k)[3].plain == rank]
        assert straggler and straggler[0][0].plain == backend.straggler_node
        assert str(straggler[0][0].style) == STRAGGLER  # highlighted
        assert table.get_row_at(table.cursor_row)[3].plain == rank  # the cursor on it
        assert f"straggler rank {rank} on {backend.straggler_node} highlighted" in screen_text(app)


@pytest.mark.parametrize("size", SIZES)
async def test_validate_offers_the_resume_only_when_the_node_passes(tmp_path, size):
    """NVSentinel #1427, soperator #1317: a drained node's health runbook, then the resume
    (the one confirmation, audited with the verdict); a node that fails is never offered it."""
    from cockpit.core.actions import Params, build_plan
    from cockpit.core.audit import read_audit
    from cockpit_runbooks.screen import RunbookScreen

    app, backend = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        healthy = backend.straggler_node  # its GPUs, links and kernel log are clean in the demo
        await app.gate().execute(build_plan("drain", [healthy], Params(reason="test: drained to validate")),
                                 confirmed=True)
        app.action_refresh_now()
        await wait_until(pilot, lambda: app.snapshot.node(healthy).is_unavailable, "the drain seen")

        await pilot.press("colon", *f"validate {backend.xid_node}", "enter")  # Xid 79: fails
        book = await wait_screen(pilot, app, RunbookScreen)
        await wait_until(pilot, lambda: book.finished, "the failed validation to end", timeout=60)
        assert not isinstance(app.screen, ConfirmAction)
        await wait_for_text(pilot, "resume not offered: the validation is CRIT")
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.main, "back on the main screen")

        await pilot.press("colon", *f"validate {healthy}", "enter")
        resume = await next_confirm(pilot, app)
        assert resume.plan.spec.name == "resume" and resume.plan.targets == (healthy,)
        assert resume.origin == f"validation node-validate passed (OK) on node {healthy}: resume it?"
        await pilot.press("y")
        await wait_for_text(pilot, f"resumed {healthy} (audited)")
    done = [r for r in read_audit(tmp_path / "demo-audit.jsonl") if r.get("action") == "resume"]
    assert done and done[-1]["target"] == healthy and done[-1].get("note") == "validated: runbook node-validate OK"
