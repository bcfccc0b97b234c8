"""Key P: a job's processes per node (Pilot, with an injected process list).

The real listing (scontrol listpids over SSH) is tested on the cluster in
tests/remote/test_joblog_remote.py; here the loader is the app's seam.
"""

from __future__ import annotations

from cockpit.core.jobprocs import JobProcess
from cockpit.errors import CockpitError
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.detail import JobDetailScreen
from cockpit.tui.screens.jobprocs import JobProcsScreen

from .fakes import NOW, FakeBackend


def screen_text(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def wait_for_text(pilot, app, needle: str, tries: int = 60) -> str:
    for _ in range(tries):
        text = screen_text(app)
        if needle in text:
            return text
        await pilot.pause(0.05)
    raise AssertionError(f"{needle!r} never shown on {type(app.screen).__name__}:\n{screen_text(app)}")


class FakeLoader:
    """Stands in for SSH: records which jobs were asked, answers a fixed list."""

    def __init__(self, fail: bool = False):
        self.asked: list[int] = []
        self.fail = fail

    async def __call__(self, job):
        self.asked.append(job.job_id)
        if self.fail:
            raise CockpitError("ssh gpu01: connection refused")
        procs = {"gpu01": [
            JobProcess("gpu01", 4242, "0", "Rl", 3725, "python train.py [bold]x[/bold] \x1b[31mred", 3),
            JobProcess("gpu01", 4250, "batch", "D", 12, "/bin/sh slurm_script", None),
        ]}
        return procs, {"gpu02": "ssh gpu02: no answer within 10 s (connect timeout)"}


async def _open_job_detail(pilot, app, job_id: int) -> None:
    await pilot.pause(0.2)
    await pilot.press("5")
    await pilot.pause(0.2)
    assert app.main.active_table().select_key(job_id)
    await pilot.press("enter")
    for _ in range(40):
        if isinstance(app.screen, JobDetailScreen):
            return
        await pilot.pause(0.05)
    raise AssertionError("job detail not opened")


async def test_P_on_a_job_detail_lists_processes_per_node():
    loader = FakeLoader()
    app = CockpitApp(FakeBackend(), clock=lambda: NOW)
    app.job_procs_loader = loader
    async with app.run_test(size=(140, 36)) as pilot:
        await _open_job_detail(pilot, app, 101)
        await pilot.press("P")
        await pilot.pause(0.1)
        assert isinstance(app.screen, JobProcsScreen)
        text = await wait_for_text(pilot, app, "2 process(es)")
        assert "job 101: 2 process(es) on 1 node(s), 1 node(s) failed" in text
        row = next(line for line in text.splitlines() if "4242" in line)
        # cluster strings literal: markup kept as text, the escape sequence removed
        assert "python train.py [bold]x[/bold] red" in row and "\x1b" not in row
        assert "Rl" in row and "1h02m" in row and " 3 " in row
        assert "4250" in text and "batch" in text
        assert "gpu02" in text and "no answer within 10 s" in text
        await pilot.press("r")
        await wait_for_text(pilot, app, "2 process(es)")
        assert loader.asked == [101, 101]
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert isinstance(app.screen, JobDetailScreen)


async def test_P_reports_a_failed_listing_per_node_and_refuses_a_pending_job():
    loader = FakeLoader(fail=True)
    app = CockpitApp(FakeBackend(), clock=lambda: NOW)
    app.job_procs_loader = loader
    async with app.run_test(size=(140, 36)) as pilot:
        await _open_job_detail(pilot, app, 101)
        await pilot.press("P")
        text = await wait_for_text(pilot, app, "failed")
        assert "0 process(es) on 1 node(s), 1 node(s) failed" in text and "connection refused" in text
        await pilot.press("escape", "escape")
        await pilot.pause(0.1)
        assert app.main.active_table().select_key(103)  # pending: no node runs it
        await pilot.press("P")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, JobProcsScreen)
    assert loader.asked == [101]


async def test_P_without_a_loader_on_a_backend_without_nodes_does_not_connect():
    app = CockpitApp(FakeBackend(), clock=lambda: NOW)  # no runner: nothing to SSH to
    async with app.run_test(size=(140, 36)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("5")
        await pilot.pause(0.2)
        assert app.main.active_table().select_key(101)
        await pilot.press("P")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, JobProcsScreen)
