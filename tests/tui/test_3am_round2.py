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
from tuiwait import screen_text, wait_for_text, wait_until

from .test_actions_tui import wait_screen
from .test_pilot import settle

FROZEN = 1_750_000_000.0
SIZES = [(80, 24), (160, 48)]


def demo(tmp_path) -> tuple[CockpitApp, DemoBackend]:
    clock = lambda: FROZEN  # noqa: E731
    backend = DemoBackend(seed=7, clock=clock)
    app = CockpitApp(backend, Config(general=General(audit_log=str(tmp_path / "audit.jsonl"))), clock=clock)
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
        assert signal.origin.startswith("runbook hung-job, step 10 of 13: Ask every rank")
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
        text = screen_text(app)
        assert "Result:" in text and "drain-straggler: done" in text and "requeue: done" in text
        assert "dump: declined" in text and "action-f" not in text
