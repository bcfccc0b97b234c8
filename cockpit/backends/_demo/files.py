"""The demo's shared filesystem: job output files and batch scripts.

Files the simulation writes (a submitted job's output, when it ends) are kept
in a table; the output of the scenario's own jobs is generated from the job
when it is read, so it always matches what squeue shows: nothing before the
job starts, a line every few minutes while it runs, Slurm's last words when it
ends. The hung job's log stops with the PyTorch watchdog's timeout on every
rank but the straggler (the shape of tests/data/pytorch-nccl-timeout; ranks,
hosts and numbers simulated), written at ``hung_since``. Every generated file
says SIMULATED on its first line.
"""

from __future__ import annotations

import time as _time
import zlib
from dataclasses import dataclass
from typing import Any

from cockpit.backends._demo.procs import task_command
from cockpit.backends._demo.state import PENDING, RUNNING, SimJob

MAX_LINES = 400  # a generated log writes at most this many progress lines
ITER_S = 2.95  # the hung job's seconds per iteration before it hung


@dataclass(frozen=True, slots=True)
class DemoFile:
    data: bytes
    mtime: int
    inode: int


def _stamp(t: float) -> str:
    return _time.strftime("%Y-%m-%d %H:%M:%S", _time.gmtime(t))


def _glog(t: float, rank: int) -> str:
    """PyTorch's c10 log prefix: ``[rank3]:[E1201 08:01:02.123456789 ``."""
    g = _time.gmtime(t)
    return f"[rank{rank}]:[E{g.tm_mon}{g.tm_mday:02d} {_time.strftime('%H:%M:%S', g)}.{int(t % 1 * 1e9):09d} "


def _simulated(job: SimJob) -> str:
    return f"cockpit demo: SIMULATED output of job {job.job_id} ({job.name}); nothing here ran\n"


def _hung_log(sc: Any, job: SimJob) -> tuple[str, int]:
    start = job.start_time or 0
    hung_at = sc.hung_since - 600  # the all_reduce that never completed began here
    world = len(job.nodes) * max(job.gpus_per_node, 1)
    out = [_simulated(job),
           f"using world size: {world}, data-parallel size: {max(world // 32, 1)}, context-parallel size: 1, "
           "tensor-model-parallel size: 8, pipeline-model-parallel size: 4\n",
           "> initializing torch distributed ...\n", f"[{_stamp(start + 95)}] training ...\n"]
    step = max(100, -(-int((hung_at - start) / ITER_S / MAX_LINES) // 100) * 100)  # whole hundreds
    it = step
    while start + 120 + it * ITER_S < hung_at:
        t = start + 120 + it * ITER_S
        loss = 1.9 + 2.6 * 3000 / (3000 + it) + 0.02 * ((zlib.crc32(str(it).encode()) % 100) / 100 - 0.5)
        out.append(f" [{_stamp(t)}] iteration {it:8d}/ 250000 | consumed samples: {it * 1024:12d} | "
                   f"elapsed time per iteration (ms): {ITER_S * 1000 + (it % 7) * 3.1:.1f} | learning rate: 1.500E-04 | "
                   f"global batch size:  1024 | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: 0.{2 + it % 5}13 | "
                   "number of skipped iterations:   0 | number of nan iterations:   0 |\n")
        it += step
    seq = 3 * it + 2
    numel = 131_334_144
    t0 = sc.hung_since - 1
    for rank in (r for r in range(world) if r != sc.straggler_rank):
        t = t0 + 0.000731 * rank
        out.append(_glog(t, rank) + f"ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught collective operation "
                   f"timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, NumelOut={numel}, "
                   f"Timeout(ms)=600000) ran for {600_031 + rank * 3} milliseconds before timing out.\n")
    for rank in (r for r in range(world) if r != sc.straggler_rank):
        out.append(_glog(t0 + 0.05 + 0.000517 * rank, rank) + f"ProcessGroupNCCL.cpp:1664] [PG 0 Rank {rank}] "
                   f"Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued "
                   f"NCCL work: {seq}, last completed NCCL work: {seq - 1}.\n")
    out.append(_glog(t0 + 0.09, 0) + "ProcessGroupNCCL.cpp:667] Stack trace of the failed collective not found, "
               "potentially because FlightRecorder is disabled. You can enable it by setting "
               "TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.\n")
    return "".join(out), sc.hung_since


_ENDINGS = {
    "COMPLETED": "training finished: final checkpoint saved\n",
    "FAILED": "RuntimeError: CUDA error: an illegal memory access was encountered\n"
              "srun: error: {node}: task 0: Exited with exit code 1\n",
    "TIMEOUT": "slurmstepd: error: *** JOB {job} ON {node} CANCELLED AT {iso} DUE TO TIME LIMIT ***\n",
    "CANCELLED": "slurmstepd: error: *** JOB {job} ON {node} CANCELLED AT {iso} ***\n",
    "NODE_FAIL": "srun: error: Node failure on {node}\n",
}


def _progress_log(job: SimJob, now: int) -> tuple[str, int]:
    start = job.start_time or now
    end = job.end_time if job.state != RUNNING and job.end_time is not None else now
    every = max(60, (end - start) // MAX_LINES)
    out = [_simulated(job), f"+ srun {task_command(job)[0]}\n"]
    t, k = start + every, 1
    while t <= end:
        loss = 0.4 + 3.0 / (1 + k * every / 3600) + 0.01 * (zlib.crc32(f"{job.job_id}:{k}".encode()) % 10)
        out.append(f"[{_stamp(t)}] step {k * every // 3:7d} | loss {loss:.4f} | "
                   f"{3100 + zlib.crc32(f'{k}'.encode()) % 400} samples/s\n")
        t, k = t + every, k + 1
    last = start + (k - 1) * every if k > 1 else start
    if job.state != RUNNING and job.end_time is not None:
        words = _ENDINGS.get(job.state, "")
        node = job.nodes[0] if job.nodes else "?"
        iso = _time.strftime("%Y-%m-%dT%H:%M:%S", _time.gmtime(job.end_time))
        out.append(words.format(node=node, job=job.job_id, iso=iso))
        last = job.end_time
    return "".join(out), last


def job_output(sc: Any, job: SimJob, now: int) -> tuple[str, int] | None:
    """The text of a scenario job's stdout and its mtime; None before the job started."""
    if job.state == PENDING or job.start_time is None or not job.stdout:
        return None
    if job.job_id == sc.hung_job_id and job.state == RUNNING:
        return _hung_log(sc, job)
    return _progress_log(job, now)


def batch_script(sc: Any, job: SimJob) -> str | None:
    """What ``scontrol write batch_script JOB -`` prints; None for a job without one."""
    if job.script:
        return job.script
    if job.command == "bash" or not job.stdout:
        return None
    lines = ["#!/bin/bash", f"#SBATCH --job-name={job.name}", f"#SBATCH --partition={job.partition}",
             f"#SBATCH --nodes={job.node_count}"]
    if job.gpus_per_node:
        lines += [f"#SBATCH --ntasks-per-node={job.gpus_per_node}", f"#SBATCH --gpus-per-node={job.gpus_per_node}"]
    limit = f"{job.time_limit // 1440}-{job.time_limit % 1440 // 60:02d}:{job.time_limit % 60:02d}:00"
    lines += [f"#SBATCH --time={limit}", f"#SBATCH --output={job.stdout.replace(str(job.job_id), '%j')}",
              "# SIMULATED by cockpit --demo: this script never ran anywhere"]
    if job.job_id == sc.hung_job_id:
        lines += ["export NCCL_DEBUG=WARN",
                  "export NCCL_ASYNC_ERROR_HANDLING=0   # keep the job alive through a slow step",
                  "export NCCL_TIMEOUT=1800             # 30 min for collectives",
                  "export NCCL_IB_TIMEOUT=22"]
    lines.append(f"srun {task_command(job)[0]}")
    return "\n".join(lines) + "\n"


class DemoFiles:
    """Path -> file, for the paths the demo knows; everything else is missing."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._written: dict[str, DemoFile] = {}

    def put(self, path: str, text: str, mtime: int) -> None:
        self._written[path] = DemoFile(text.encode(), int(mtime), _inode(path))

    def get(self, path: str) -> DemoFile | None:
        if path in self._written:
            return self._written[path]
        sc = self._backend._sc
        job = next((j for j in sc.sim.jobs.values() if j.stdout == path and not j.script), None)
        if job is None:
            return None
        got = job_output(sc, job, int(self._backend.clock()))
        return None if got is None else DemoFile(got[0].encode(), got[1], _inode(path))


def _inode(path: str) -> int:
    return 1_000_000 + zlib.crc32(path.encode()) % 9_000_000
