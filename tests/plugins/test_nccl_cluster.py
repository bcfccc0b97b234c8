"""The torch engine (gloo on CPUs) as real Slurm jobs on the test cluster, and pair
bisection finding a node that this test slows from outside the benchmark.

The slowdown is what a straggler looks like to its peers: the test finds the job's
task processes on one node the way an operator would, with ``scontrol listpids``
run on that node (inside the UTS namespace of its slurmd), and puts them
under a CPU quota (a cgroup of their own). Nothing inside cockpit knows.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from clusterlib import run, scontrol_show
from cockpit.plugins.api import CheckContext, Severity
from cockpit_nccl import plugin

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture(scope="module")
def torch_cluster(cluster):
    """The cluster env with torch importable here (the jobs run this venv's python)."""
    pytest.importorskip("torch", reason="torch not installed: pip install -e '.[test-torch]'")
    return cluster


def run_check(cluster, tmp_path, argv, **cfg):
    os.environ.update(cluster)  # the plugin's LocalRunner runs sbatch/squeue with SLURM_CONF
    check = plugin.checks[0]
    parser = argparse.ArgumentParser()
    check.add_arguments(parser)
    # Small sizes and few iterations: the whole cluster shares this machine's 2 cores.
    config = {"engine": "torch", "torch_backend": "gloo", "torch_python": sys.executable,
              "torch_tasks_per_node": 1, "gpus_per_node": 0, "exclusive": False,
              "torch_min_bytes": "256K", "torch_max_bytes": "2M", "iters": 5, "warmup": 1,
              "poll_interval": 0.5, "job_timeout": 240.0, "time_limit": "00:05:00",
              "output_dir": str(tmp_path / "out"), "history_file": str(tmp_path / "h.jsonl"), **cfg}
    ctx = CheckContext(backend=None, config=config)
    return asyncio.run(check.run(ctx, parser.parse_args(argv)))


@pytest.mark.parametrize("hostlist,n", [("node[01-02]", 2), ("node[01-04]", 4)])
def test_torch_gloo_across_nodes(torch_cluster, tmp_path, hostlist, n):
    res = run_check(torch_cluster, tmp_path, ["--nodes", hostlist, "--mode", "all"])
    run_ = res.data["runs"][0]
    assert run_["job_state"] == "COMPLETED", res.summary
    assert run_["nranks"] == n and sorted(run_["hosts"]) == [f"node{i:02d}" for i in range(1, n + 1)]
    assert run_["engine"] == "torch" and run_["launch_problem"] is False
    # 256K..2M doubling: four sizes, each with positive busbw both ways and nothing wrong.
    assert [r[0] for r in run_["rows"]] == [256 << 10, 512 << 10, 1 << 20, 2 << 20]
    assert all(r[1] > 0 and r[2] > 0 and r[3] == 0 for r in run_["rows"])
    # Loopback TCP on one machine: well above nothing, far below memory bandwidth.
    assert 0.01 < run_["busbw_gbps"] < 100
    assert run_["size_bytes"] in (512 << 10, 1 << 20, 2 << 20)  # judged among the largest sizes
    # No expected figure and no history yet: measured but not judged.
    assert res.severity == Severity.UNKNOWN
    assert (tmp_path / "h.jsonl").read_text().count('"busbw"') == 1


CGROUP_V1 = Path("/sys/fs/cgroup/cpu")  # cgroup v1 cpu controller (this machine)
CGROUP_V2 = Path("/sys/fs/cgroup")  # unified hierarchy (a stock Debian 12)


class Straggler:
    """Throttle one node's tasks of this test's jobs to a CPU quota, from outside.

    Jobs are found with squeue (running on the node, the plugin's job name, output in
    this test's folder); their task pids with ``scontrol listpids JOB`` run on the node
    (in its UTS namespace), keeping only job steps (not the batch script or its srun, which run on
    whichever node holds the batch step). Each task is moved into a cgroup of its own
    with a CFS quota (``quota_us`` of CPU per ``period_us``).

    The quota starts when a task opens its first socket (``/proc/PID/fd``, as lsof
    would see it): that is torch.distributed's rendezvous, after ``import torch``
    (~2 s of CPU that a quota from the task's start would stretch for nothing) and
    well before the first measurement.

    Why a quota and not SIGSTOP/SIGCONT from a thread here: the benchmark starts each
    timed loop right after a barrier, so a stopped rank restarts its clock on each
    SIGCONT; when this test's own thread is late (2 busy cores) the "on" slice
    stretches, a whole timed loop fits inside it, and the judge (best of the largest
    sizes) reads full speed. The kernel enforces a quota on every period, on time.
    """

    def __init__(self, cluster, node: str, job_name: str, out_dir: Path, quota_us=1000, period_us=10000):
        self.cluster, self.node, self.job_name, self.out_dir = cluster, node, job_name, out_dir
        self.found: dict[str, list[int]] = {}  # job id -> task pids that listpids gave
        self.waiting: dict[str, list[int]] = {}  # job id -> task pids not yet throttled
        self.log: list[str] = []  # what was found when, for the failure message
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._discover, daemon=True),
                         threading.Thread(target=self._trigger, daemon=True)]
        self.cgroup = self._make_cgroup(f"cockpit-test-straggler-{os.getpid()}", quota_us, period_us)

    @staticmethod
    def _make_cgroup(name: str, quota_us: int, period_us: int) -> Path:
        """A new cgroup with the quota; raises OSError (and leaves nothing) where it cannot."""
        if (CGROUP_V1 / "cpu.cfs_quota_us").exists():
            group, limits = CGROUP_V1 / name, {"cpu.cfs_period_us": period_us, "cpu.cfs_quota_us": quota_us}
        elif "cpu" in (CGROUP_V2 / "cgroup.controllers").read_text().split():
            (CGROUP_V2 / "cgroup.subtree_control").write_text("+cpu")
            group, limits = CGROUP_V2 / name, {"cpu.max": f"{quota_us} {period_us}"}
        else:
            raise OSError("no CPU bandwidth control (cgroup v1 cpu or v2 cpu.max)")
        group.mkdir()
        try:
            for key, value in limits.items():
                (group / key).write_text(str(value))
        except OSError:
            group.rmdir()
            raise
        return group

    def _ours(self, job: str) -> bool:
        try:
            return scontrol_show("job", job).get("StdOut", "").startswith(str(self.out_dir))
        except Exception:  # the job ended between squeue and scontrol
            return False

    def _on_node(self) -> list[str]:
        """nsenter into the UTS namespace of the node's slurmd: "on the node" without its
        sshd, which the SSH tests stop and freeze while they run."""
        run_dir = Path(self.cluster.get("COCKPIT_TEST_CLUSTER_RUN", "/run/cockpit-cluster"))
        pid = (run_dir / "pids" / f"{self.node}.slurmd.pid").read_text().strip()
        return ["nsenter", "--uts", "--target", pid]

    def _task_pids(self, job: str) -> list[int]:
        res = run([*self._on_node(), "scontrol", "listpids", job], check=False)
        self.log.append(f"{time.monotonic():.1f} listpids {job}: rc {res.returncode} "
                        f"{res.stdout.strip()!r} {res.stderr.strip()[:200]!r}")
        pids = []
        for line in res.stdout.splitlines()[1:]:  # PID JOBID STEPID LOCALID GLOBALID
            cols = line.split()
            if len(cols) >= 3 and cols[0].isdigit() and cols[1] == job and cols[2].isdigit():
                pids.append(int(cols[0]))
        return pids

    def _throttle(self, pids: list[int]) -> None:
        for pid in pids:
            try:  # cgroup.procs moves every thread of the process
                (self.cgroup / "cgroup.procs").write_text(str(pid))
            except OSError as exc:  # ESRCH: it already ended
                self.log.append(f"cannot throttle {pid}: {exc}")

    def _discover(self) -> None:
        while not self._stop.wait(0.2):
            res = run(["squeue", "-h", "-w", self.node, "-n", self.job_name, "-t", "R", "-o", "%i"],
                      check=False)
            for job in res.stdout.split():
                # Step 0 starts a moment after the job: ask again until its tasks show.
                if not self.found.get(job) and self._ours(job):
                    self.found[job] = self._task_pids(job)
                    if self.found[job]:
                        self.waiting[job] = self.found[job]

    @staticmethod
    def _has_socket(pid: int) -> bool:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            return False
        for fd in fds:
            try:
                if os.readlink(fd).startswith("socket:"):
                    return True
            except OSError:
                pass
        return False

    def _trigger(self) -> None:
        while not self._stop.wait(0.02):
            for job, pids in list(self.waiting.items()):
                if any(self._has_socket(pid) for pid in pids):
                    self._throttle(pids)
                    self.log.append(f"{time.monotonic():.2f} throttled job {job}: {pids}")
                    del self.waiting[job]

    def throttled(self) -> set[int]:
        """The pids in the cgroup now."""
        return {int(p) for p in (self.cgroup / "cgroup.procs").read_text().split()}

    def __enter__(self) -> "Straggler":
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)
        # Never leave a task throttled: back to the parent, then remove the group.
        for pid in self.throttled():
            try:
                (self.cgroup.parent / "cgroup.procs").write_text(str(pid))
            except OSError:
                pass
        for _ in range(50):  # an exiting task can hold the group for a moment
            try:
                self.cgroup.rmdir()
                return
            except OSError:
                time.sleep(0.1)
        self.cgroup.rmdir()


def test_pair_bisection_names_the_slowed_node(torch_cluster, tmp_path):
    try:
        straggler = Straggler(torch_cluster, "node03", "cockpit-nccl-pair", tmp_path / "out")
    except OSError as exc:
        pytest.skip(f"cannot slow a node from outside: {exc}")
    with straggler as slow:
        # Disjoint pairs run at the same time (the plugin's default), so CPU load from
        # other users of this 2-core machine, which moves a lone healthy pair by up to
        # ~9x between runs, hits the pairs being compared alike; the quota only takes
        # CPU away from node03, it cannot slow the pair beside it. Every timed loop
        # (10 x 512K-2M, >= 2.5 ms of CPU) needs more than one period's quota (1 ms, the
        # kernel's minimum), or a loop that starts on a fresh period escapes it. 10% of a
        # CPU costs node03's pairs 10x or more: a slow ratio of 0.25 separates them.
        res = run_check(torch_cluster, tmp_path, ["--nodes", "node[01-04]", "--mode", "pair"],
                        pair_slow_ratio=0.25, warmup=3, iters=10, job_timeout=600.0,
                        torch_min_bytes="512K")
    # The slowdown really reached node03's tasks: two pair jobs ran there (round 1 and 2).
    suspect = res.data["suspect"]
    why = "\n".join([res.summary, *suspect["evidence"], *slow.log,
                     *(f"{r['nodes']} job {r['job_id']}: {r['rows']}" for r in res.data["runs"])])
    print(why)  # the figures, for the log (pytest -rP)
    assert len(slow.found) >= 2 and all(slow.found.values()) and not slow.waiting, why
    assert suspect["nodes"] == ["node03"], why
    assert not suspect["ambiguous"] and res.severity == Severity.CRIT
    assert any(e.startswith("node03: slow in 2 of 2") for e in suspect["evidence"]), suspect["evidence"]
    assert all(r["job_state"] == "COMPLETED" and r["nranks"] == 2 for r in res.data["runs"])
    # Round 1: 01+02 and 03+04; round 2: 03 and 04 each beside a node cleared in round 1.
    assert len({r["nodes"] for r in res.data["runs"]}) == 4, [r["nodes"] for r in res.data["runs"]]
