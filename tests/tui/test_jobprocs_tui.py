"""Key P: a job's processes per node (Pilot), through the App's probe runner.

The probe runner here answers ``scontrol listpids``, ``ps`` and nvidia-smi from
fixed text (the real listing over SSH is tested on the cluster in
tests/remote/test_joblog_remote.py); the demo's simulated nodes answer in
tests/tui/test_demo_probes_tui.py.
"""

from __future__ import annotations


from cockpit.errors import CockpitError
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.detail import JobDetailScreen
from cockpit.tui.screens.jobprocs import JobProcsScreen
from cockpit.models import record_replace

from .fakes import NOW, FakeBackend, FakeProbes, result

LISTPIDS = "PID      JOBID    STEPID   LOCALID GLOBALID\n4242     101      0        0       0\n4250     101      batch    -       -\n"
PS = " 4242 Rl   3725 python train.py [bold]x[/bold] \x1b[31mred\n 4250 D      12 /bin/sh slurm_script\n"


def screen_text(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def wait_for_text(pilot, app, needle: str, tries: int = 60) -> str:
    for _ in range(tries):
        text = screen_text(app)
        if needle in text:
            return text
        await pilot.pause(0.05)
    raise AssertionError(f"{needle!r} never shown on {type(app.screen).__name__}:\n{screen_text(app)}")


def node_answers(node: str, argv: list[str]):
    """gpu01 runs job 101's processes; gpu02 does not answer."""
    if node == "gpu02":
        return CockpitError("ssh gpu02: no answer within 10 s (connect timeout)")
    words = argv[2:] if argv[0] == "env" else argv  # env SLURMD_NODENAME=gpu01 scontrol ...
    if words[:2] == ["scontrol", "listpids"]:
        return result(argv, LISTPIDS)
    if words[0] == "ps":
        return result(argv, PS)
    if "--query-compute-apps=pid,gpu_uuid" in words:
        return result(argv, "4242, GPU-aaaa\n")
    if "--query-gpu=index,uuid" in words:
        return result(argv, "3, GPU-aaaa\n")
    return result(argv, "", 127, "not here")


def two_node_backend() -> FakeBackend:
    backend = FakeBackend()
    backend.jobs = tuple(record_replace(j, nodes=("gpu01", "gpu02"), node_count=2) if j.job_id == 101 else j
                         for j in backend.jobs)
    return backend


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
    probes = FakeProbes(node_answers)
    app = CockpitApp(two_node_backend(), clock=lambda: NOW, probes=probes)
    async with app.run_test(size=(140, 36)) as pilot:
        await _open_job_detail(pilot, app, 101)
        await pilot.press("P")
        await pilot.pause(0.1)
        assert isinstance(app.screen, JobProcsScreen)
        text = await wait_for_text(pilot, app, "2 process(es)")
        assert "job 101: 2 process(es) on 2 node(s), 1 node(s) failed" in text
        row = next(line for line in text.splitlines() if "4242" in line)
        # cluster strings literal: markup kept as text, the escape sequence removed
        assert "python train.py [bold]x[/bold] red" in row and "\x1b" not in row
        assert "Rl" in row and "1h02m" in row and " 3 " in row
        assert "4250" in text and "batch" in text
        assert "gpu02" in text and "no answer within 10 s" in text
        asked = len(probes.calls)
        await pilot.press("r")
        await wait_for_text(pilot, app, "2 process(es)")
        assert len(probes.calls) > asked  # asked again
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert isinstance(app.screen, JobDetailScreen)
    # the listing ran on the node itself (slurmd's name for it), through the probe runner
    assert ("gpu01", ("env", "SLURMD_NODENAME=gpu01", "scontrol", "listpids", "101")) in probes.calls
    assert probes.closed  # the app closes its probe runner on exit


async def test_P_reports_a_failed_listing_per_node_and_refuses_a_pending_job():
    probes = FakeProbes(lambda node, argv: CockpitError(f"ssh {node}: connection refused"))
    app = CockpitApp(FakeBackend(), clock=lambda: NOW, probes=probes)
    async with app.run_test(size=(140, 36)) as pilot:
        await _open_job_detail(pilot, app, 101)
        await pilot.press("P")
        text = await wait_for_text(pilot, app, "failed")
        assert "0 process(es) on 1 node(s), 1 node(s) failed" in text and "connection refused" in text
        await pilot.press("escape", "escape")
        await pilot.pause(0.1)
        calls = len(probes.calls)
        assert app.main.active_table().select_key(103)  # pending: no node runs it
        await pilot.press("P")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, JobProcsScreen)
        assert len(probes.calls) == calls


async def test_P_on_a_backend_without_probes_says_why_and_connects_nowhere():
    app = CockpitApp(FakeBackend(), clock=lambda: NOW)  # brings no probe runner: nothing to ask
    async with app.run_test(size=(140, 36)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("5")
        await pilot.pause(0.2)
        assert app.main.active_table().select_key(101)
        await pilot.press("P")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, JobProcsScreen)
        assert any("no processes to list" in n.message for n in app._notifications)
