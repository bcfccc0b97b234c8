"""The Pulse on the demo (issue 16, item 2 and "Suspects on the Pulse"): the hung job
is listed first with its evidence, the Xid-79 node among the drained ones, rows are
selectable, ``w`` runs the hung-job runbook that names the straggler with its stack,
and the job's detail then lists the straggler's node first."""

from __future__ import annotations

from cockpit.backends.demo import DemoBackend
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.detail import JobDetailScreen, NodeDetailScreen

from .test_actions_tui import wait_screen
from .test_pilot import screen_text, settle

FROZEN = 1_750_000_000.0


async def wait(pilot, what, predicate, tries=200):
    for _ in range(tries):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"{what}: not seen")


async def test_pulse_suspects_w_and_enter_enter_to_the_straggler(tmp_path):
    from cockpit.config import Config, General

    clock = lambda: FROZEN  # noqa: E731
    backend = DemoBackend(seed=7, clock=clock)
    app = CockpitApp(backend, Config(general=General(audit_log=str(tmp_path / "audit.jsonl"))), clock=clock)
    async with app.run_test(size=(160, 48)) as pilot:
        pulse = app.main.pulse
        await wait(pilot, "the hung job among the suspects", lambda: backend.hung_job_id in pulse.suspects.data.rows)
        await settle(pilot, app)
        row = pulse.suspects.data.rows[backend.hung_job_id]
        assert "output silent" in row.values[5]
        assert pulse.suspects.data.order[0] == backend.hung_job_id  # listed first
        assert backend.xid_node in pulse.bad.data.rows
        text = screen_text(app)
        assert "SUSPECT JOBS (" in text and "Xid 79" in text
        assert app.screen.focused is pulse.suspects  # the cursor is on the hung job
        await pilot.press("w")
        from cockpit_runbooks.screen import RunbookScreen, findings_text

        book = await wait_screen(pilot, app, RunbookScreen)
        await wait(pilot, "the runbook to finish", lambda: book.finished, tries=600)
        await settle(pilot, app)
        found = findings_text(book.outcomes).plain
        assert f"straggler: rank {backend.straggler_rank} on {backend.straggler_node}" in found
        assert f"rank {backend.straggler_rank} (pid" in found  # its stack, under the finding
        await pilot.press("escape")
        await settle(pilot, app)
        await pilot.press("enter")
        await wait_screen(pilot, app, JobDetailScreen)
        await settle(pilot, app)
        assert "← straggler" in screen_text(app)
        await pilot.press("enter")
        node = await wait_screen(pilot, app, NodeDetailScreen)
        assert node.key == backend.straggler_node


async def test_the_suspects_gpus_are_read_as_soon_as_the_pulse_names_them(tmp_path, monkeypatch):
    """Not at the app's next once-a-second tick: with that tick switched off, the Pulse's
    naming of the hung job's nodes is what starts the first GPU read (the job's 0% use
    is its evidence, and it should not wait)."""
    from cockpit.config import Config, General
    from tuiwait import wait_until

    monkeypatch.setattr(CockpitApp, "_tick", lambda self: None)
    clock = lambda: FROZEN  # noqa: E731
    backend = DemoBackend(seed=7, clock=clock)
    app = CockpitApp(backend, Config(general=General(audit_log=str(tmp_path / "audit.jsonl"))), clock=clock)
    async with app.run_test(size=(160, 48)) as pilot:
        pulse = app.main.pulse
        await wait_until(pilot, lambda: backend.hung_job_id in pulse.suspects.data.rows, "the hung job among the suspects")
        live = app.live_telemetry
        await wait_until(pilot, lambda: live.polls >= 1, "the first GPU reading")
        hung = next(j for j in app.snapshot.jobs if j.job_id == backend.hung_job_id)
        assert set(pulse.watch_nodes) <= set(live.last_nodes) and set(hung.nodes) & set(live.last_nodes)
        assert app.current_view() == "pulse"  # no GPU view shown, which would have asked too
