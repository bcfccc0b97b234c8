"""In the demo, ``d`` (scontrol show job|node) and ``L`` (slurmctld's and slurmd's logs)
show what the simulated cluster says, in Slurm's words, and agree with the rest of
the demo: the job's user, state and nodes, the drained node's Xid reason, the log
lines of the job that runs on the node. Nothing here runs a program."""

from __future__ import annotations

from textual.widgets import RichLog

from cockpit.hostlist import collapse
from cockpit.tui.screens.slurmtext import DescribeScreen, SlurmLogsScreen

from tuiwait import wait_until

from .test_actions_tui import wait_screen
from .test_demo_probes_tui import _select_hung_job, demo_app
from .test_pilot import settle


def log_text(screen) -> str:
    """The screen's text lines as one line, white space folded (RichLog wraps long lines)."""
    logs = screen.query(RichLog)
    return " ".join(" ".join(strip.text.split()) for strip in logs.first().lines) if logs else ""


async def shown(pilot, screen, *needles: str) -> str:
    """The screen's text once every needle is in it (AssertionError with the text if not)."""
    await wait_until(pilot, lambda: all(n in log_text(screen) for n in needles), f"{needles} on screen")
    return log_text(screen)


async def test_d_on_the_hung_job_shows_scontrol_show_job_and_L_on_its_node_the_logs():
    app, backend = demo_app()
    asked: list[tuple[str, list[str]]] = []
    answer = app.probes.answer

    def counted(node, argv):
        asked.append((node, list(argv)))
        return answer(node, argv)

    app.probes.answer = counted
    async with app.run_test(size=(220, 50)) as pilot:
        job = await _select_hung_job(pilot, app, backend)
        await pilot.press("d")
        screen = await wait_screen(pilot, app, DescribeScreen)
        text = await shown(pilot, screen, f"JobId={job.job_id} JobName={job.name}")
        assert "not simulated" not in text and "failed" not in text
        assert f"UserId={job.user}(1000)" in text and "JobState=RUNNING Reason=None" in text
        assert f"NodeList={collapse(job.nodes)}" in text and f"BatchHost={job.nodes[0]}" in text
        assert f"Partition={job.partition} " in text and f"Account={job.account} " in text
        assert ("", ["scontrol", "show", "job", str(job.job_id)]) in asked

        await pilot.press("escape")
        await settle(pilot, app)
        assert not isinstance(app.screen, DescribeScreen)
        await pilot.press("2")
        await settle(pilot, app)
        node = job.nodes[0]
        assert app.main.active_table().select_key(node)
        await pilot.press("L")
        logs = await wait_screen(pilot, app, SlurmLogsScreen)
        text = await shown(pilot, logs, "/var/log/slurm/slurmctld.log", f"slurmd on {node}: /var/log/slurm/slurmd.{node}.log",
                           "launch task StepId=")
        assert "cannot read it" not in text and "not simulated" not in text
        ctld, _, slurmd = text.partition(f"slurmd on {node}")
        # slurmctld's lines are its own: allocations at the times squeue shows, with Slurm's prefix
        assert "] sched: Allocate JobId=" in ctld and "_slurm_rpc_submit_batch_job: JobId=" in ctld
        assert ctld.count("] sched: Allocate JobId=") > 10
        # the node's slurmd started the hung job's steps, launched from its batch host
        assert f"Launching batch JobId={job.job_id} for UID 1000" in slurmd
        assert f"launch task StepId={job.job_id}.0 request from UID:1000" in slurmd
        assert f"[{job.job_id}.batch] task/cgroup: _memcg_initialize:" in slurmd
        assert ("", ["tail", "-n", "200", "--", "/var/log/slurm/slurmctld.log"]) in asked
        # at 220 columns a log line is one line on screen (it wrapped at the console's 80 before)
        strips = [strip.text for strip in logs.query_one(RichLog).lines]
        assert any("] sched: Allocate JobId=" in t and " Partition=" in t for t in strips)
        assert (node, ["tail", "-n", "200", "--", f"/var/log/slurm/slurmd.{node}.log"]) in asked


async def test_d_on_the_xid_node_shows_its_drain_reason_as_the_rest_of_the_demo_does():
    app, backend = demo_app()
    async with app.run_test(size=(220, 50)) as pilot:
        await settle(pilot, app, 0.3)
        await pilot.press("2")
        await settle(pilot, app)
        node = next(n for n in app.snapshot.nodes if n.name == backend.xid_node)
        assert node.reason and node.reason.startswith("Xid 79")
        assert app.main.active_table().select_key(backend.xid_node)
        await pilot.press("d")
        screen = await wait_screen(pilot, app, DescribeScreen)
        text = await shown(pilot, screen, f"NodeName={backend.xid_node} Arch=x86_64")
        assert f"Reason={node.reason} [{node.reason_user}@" in text
        assert "State=IDLE+DRAIN " in text and "Gres=gpu:h100:8" in text
        assert f"Partitions={','.join(node.partitions)} " in text

        await pilot.press("escape")
        await settle(pilot, app)
        await pilot.press("L")
        logs = await wait_screen(pilot, app, SlurmLogsScreen)
        text = await shown(pilot, logs, f"update_node: node {backend.xid_node} reason set to: {node.reason}")
        # the health check drained an idle node: Slurm says DRAINED, not DRAINING
        assert f"update_node: node {backend.xid_node} state set to DRAINED" in text


async def test_d_on_a_job_that_is_gone_says_slurms_words():
    app, backend = demo_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, app, 0.3)
        app.push_screen(DescribeScreen("job", "999999", services=app.services))
        screen = await wait_screen(pilot, app, DescribeScreen)
        text = await shown(pilot, screen, "failed")
        assert "scontrol show job 999999 failed: slurm_load_jobs error: Invalid job id specified" in text
