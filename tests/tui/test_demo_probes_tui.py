"""In the demo (DemoBackend), ``f``, ``P``, ``t`` and the GPU view's telemetry work
through the backend's probe runner: the simulated nodes answer, nothing runs here."""

from __future__ import annotations

from cockpit.backends.demo import DemoBackend
from cockpit.models import Job
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.joblog import JobLogScreen
from cockpit.tui.screens.jobprocs import JobProcsScreen
from tuiwait import screen_text, wait_for_text, wait_until

from .test_pilot import settle

FROZEN = 1_750_000_000.0


def demo_app() -> tuple[CockpitApp, DemoBackend]:
    clock = lambda: FROZEN  # noqa: E731
    backend = DemoBackend(seed=7, clock=clock)
    return CockpitApp(backend, clock=clock), backend


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


async def _select_hung_job(pilot, app: CockpitApp, backend: DemoBackend) -> Job:
    await settle(pilot, app)
    await pilot.press("5")
    await wait_until(pilot, lambda: app.main.active_table().select_key(backend.hung_job_id), "the hung job's row")
    await settle(pilot, app)
    job = app.snapshot.job(backend.hung_job_id)
    assert job is not None and job.state == "RUNNING" and job.nodes
    return job


async def test_f_follows_a_running_demo_job_on_its_simulated_batch_host():
    app, backend = demo_app()
    async with app.run_test(size=(160, 40)) as pilot:
        job = await _select_hung_job(pilot, app, backend)
        await pilot.press("f")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, JobLogScreen) and app.screen, "the log screen")
        # read on the job's batch host, through the demo's probe runner (never this machine's files)
        await wait_until(pilot, lambda: screen.source.startswith(f"{job.nodes[0]}:"), "the source on the batch host")
        title = await wait_until(pilot, lambda: next((ln for ln in screen_text(app).splitlines() if "(following)" in ln), ""),
                                 "the title")
        assert f"job {job.job_id} stdout: {job.nodes[0]}:" in title and "from the simulated node" in title
        assert not any("no nodes" in n or "has no" in n for n in notes(app))
        log = screen.query_one("#log")
        await wait_until(pilot, lambda: log.lines, "the job's simulated output lines")


async def test_P_lists_a_demo_job_processes_from_its_simulated_nodes():
    app, backend = demo_app()
    async with app.run_test(size=(160, 40)) as pilot:
        job = await _select_hung_job(pilot, app, backend)
        await pilot.press("P")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, JobProcsScreen) and app.screen, "the processes")
        assert not any("no nodes" in n or "no processes to list" in n for n in notes(app))
        await wait_until(pilot, lambda: screen.procs or screen.errors, "the nodes' answers")
        assert set(screen.procs) | set(screen.errors) == set(job.nodes)
        assert sum(len(p) for p in screen.procs.values()) > 0, screen.errors


async def test_demo_gpu_view_polls_telemetry_of_the_simulated_nodes_on_screen():
    app, backend = demo_app()
    asked: list[list[str]] = []
    on_nodes = app.probes.on_nodes

    async def counted(nodes, argv, **kw):
        asked.append(list(nodes))
        return await on_nodes(nodes, argv, **kw)

    app.probes.on_nodes = counted
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, app)
        assert app.telemetry_state == "on"
        t_help = dict(app.key_rows())["t"]
        assert t_help.startswith("poll GPU telemetry now") and "GPU telemetry is" not in t_help  # t is on
        await pilot.press("3")
        await wait_until(pilot, lambda: app.live_telemetry.polls >= 1, "a telemetry poll")
        await settle(pilot, app)
        shown = {str(k).rsplit(":", 1)[0] for k in app.main.active_table().visible_keys()}
        # the nodes on screen (the first poll ran before the panel took its lines) and the nodes of the
        # Pulse's suspects (the hung job's: their GPUs' use is evidence), not the cluster's 64
        extra = set(asked[0]) - shown - set(app.main.pulse.watch_nodes)
        assert shown <= set(asked[0]) and len(extra) <= 2, (asked[0], shown)
        await wait_for_text(pilot, lambda t: "GPU telemetry via demo (simulated nodes)" in t and "SIMULATED" in t,
                            "the panel and the SIMULATED mark")
        # the simulated nvidia-smi fills the columns (the poll's readings reach app.telemetry by a message)
        await wait_until(pilot, lambda: any("util" in v for v in app.telemetry.values()), "readings in the GPU columns")
