"""Actions in the TUI (Pilot): select, menu, parameters, confirm with the exact argv, results.

The first tests drive an admin-capable fake cluster (the demo executor path);
the last one acts on the real test cluster through the Slurm CLI backend and
reads the new state back with squeue.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from cockpit.config import Config, General, Refresh
from cockpit.core.audit import read_audit
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.actions import ActionMenu, ActionResults, ConfirmAction, ParamsForm
from cockpit.tui.screens.joblog import JobLogScreen
from cockpit.models import record_replace

from .fakes import NOW, FakeBackend


class AdminFake(FakeBackend):
    """The fake cluster, with the demo backend's admin methods."""

    def __init__(self):
        super().__init__()
        self.done: list[tuple] = []

    def action_executor(self, config):
        from cockpit.backends._demo.executor import DemoExecutor

        return DemoExecutor(self)

    def cancel_job(self, job):
        if job == "105":
            raise KeyError("Access/permission denied")
        self.jobs = tuple(record_replace(j, state="CANCELLED") if str(j.job_id) == job else j for j in self.jobs)
        self.done.append(("cancel", job))

    def drain_node(self, node, reason):
        self.done.append(("drain", node, reason))


def _config(tmp_path, **general):
    return Config(general=General(audit_log=str(tmp_path / "audit.jsonl"), **general),
                  refresh=Refresh(nodes=0.1, jobs=0.1, partitions=0.1, topology=0.1))


def screen_text(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def settle(pilot, app, delay=0.15):
    await pilot.pause(delay)
    await pilot.pause()


async def wait_screen(pilot, app, cls, tries=50):
    for _ in range(tries):
        if isinstance(app.screen, cls):
            return app.screen
        await pilot.pause(0.05)
    raise AssertionError(f"{cls.__name__} never shown (on {type(app.screen).__name__})")


async def test_bulk_cancel_marked_jobs_shows_argv_and_per_target_results(tmp_path):
    backend = AdminFake()
    app = CockpitApp(backend, _config(tmp_path), clock=lambda: NOW)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        table = app.main.active_table()
        for key in (103, 105):
            table.select_key(key)
            await pilot.press("space")
        await pilot.press("a")
        menu = await wait_screen(pilot, app, ActionMenu)
        assert menu.targets == ("103", "105")
        menu.dismiss("cancel")
        confirm = await wait_screen(pilot, app, ConfirmAction)
        text = screen_text(app)
        assert "scancel --verbose -- 103" in text and "scancel --verbose -- 105" in text
        assert backend.done == []  # nothing before the operator says yes
        await pilot.press("enter")  # focus is on Cancel: Enter alone must not run it
        await pilot.pause(0.1)
        assert backend.done == [] and not isinstance(app.screen, ConfirmAction)
        await pilot.press("a")
        (await wait_screen(pilot, app, ActionMenu)).dismiss("cancel")
        await wait_screen(pilot, app, ConfirmAction)
        await pilot.press("y")
        results = await wait_screen(pilot, app, ActionResults)
        assert [r.status for r in results.outcome.results] == ["done", "failed"]
        assert "Access/permission denied" in screen_text(app)
        assert backend.done == [("cancel", "103")]
        await pilot.press("escape")
        await settle(pilot, app, 0.3)
    recs = read_audit(tmp_path / "audit.jsonl")
    assert [(r["target"], r["result"]) for r in recs] == [("103", "done"), ("105", "failed")]
    assert confirm.plan.spec.name == "cancel"


async def test_drain_asks_for_a_reason_and_passes_it_verbatim(tmp_path):
    backend = AdminFake()
    app = CockpitApp(backend, _config(tmp_path), clock=lambda: NOW)
    reason = "IB link; $(id) [b]x[/b]"
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await settle(pilot, app)
        app.main.active_table().select_key("gpu02")
        await pilot.press("a")
        (await wait_screen(pilot, app, ActionMenu)).dismiss("drain")
        form = await wait_screen(pilot, app, ParamsForm)
        await pilot.press("enter")  # the template list opens on "free text": Enter moves on to the reason
        form.query_one("#reason").value = reason
        await pilot.press("enter")
        await wait_screen(pilot, app, ConfirmAction)
        assert "Reason=IB link; $(id) [b]x[/b]" in screen_text(app)  # markup shown literally
        await pilot.press("y")
        await wait_screen(pilot, app, ActionResults)
    assert backend.done == [("drain", "gpu02", reason)]


async def test_read_only_app_refuses_before_confirming(tmp_path):
    backend = AdminFake()
    app = CockpitApp(backend, _config(tmp_path), clock=lambda: NOW, read_only=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        app.main.active_table().select_key(101)
        await pilot.press("a")
        (await wait_screen(pilot, app, ActionMenu)).dismiss("cancel")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, ConfirmAction)
    assert backend.done == []
    assert [r["result"] for r in read_audit(tmp_path / "audit.jsonl")] == ["refused"]


async def test_follow_log_screen_shows_new_lines_sanitized(tmp_path):
    log = tmp_path / "out.log"
    log.write_text("first\n")
    backend = AdminFake()
    backend.jobs = tuple(record_replace(j, stdout=str(log)) if j.job_id == 101 else j for j in backend.jobs)
    app = CockpitApp(backend, _config(tmp_path), clock=lambda: NOW)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        app.main.active_table().select_key(101)
        await pilot.press("f")
        await wait_screen(pilot, app, JobLogScreen)
        await pilot.pause(0.3)
        with log.open("a") as fh:
            fh.write("second \x1b[31mred\x1b[0m [bold]x[/bold]\n")
        for _ in range(40):
            await pilot.pause(0.1)
            if "second red [bold]x[/bold]" in screen_text(app):
                break
        text = screen_text(app)
        assert "first" in text and "second red [bold]x[/bold]" in text
        await pilot.press("escape")


@pytest.mark.cluster
async def test_cancel_a_real_job_from_the_tui(cluster, tmp_path):
    from cockpit.runner import LocalRunner
    from cockpit.backends.slurm_cli import SlurmCliBackend

    env = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"])
    job = subprocess.run(["sbatch", "--parsable", "--hold", "-J", "cockpit-act-tui", "-o", "/dev/null",
                          "--wrap", "sleep 300"], capture_output=True, text=True, env=env, check=True).stdout.strip()
    try:
        app = CockpitApp(SlurmCliBackend(LocalRunner(env=env)), _config(tmp_path))
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.press("5")
            for _ in range(60):
                await pilot.pause(0.1)
                if app.main.active_table().select_key(int(job)):
                    break
            await pilot.press("a")
            (await wait_screen(pilot, app, ActionMenu)).dismiss("cancel")
            await wait_screen(pilot, app, ConfirmAction)
            assert f"scancel --verbose -- {job}" in screen_text(app)
            await pilot.press("y")
            results = await wait_screen(pilot, app, ActionResults, tries=200)
            assert results.outcome.ok, results.outcome.to_dict()
        state = subprocess.run(["squeue", "-h", "-t", "all", "-j", job, "-o", "%T"], capture_output=True,
                               text=True, env=env).stdout.strip()
        assert state == "CANCELLED"
    finally:
        subprocess.run(["scancel", job], env=env, capture_output=True)
