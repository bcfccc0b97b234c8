"""The processes of the simulated jobs on each node, as ``scontrol listpids``,
``ps``, ``/proc/PID/environ`` and ``py-spy dump`` show them.

Every running job has Slurm's steps on its nodes: the batch shell (and the srun
that launched the tasks) on its first node, the extern step's ``sleep``, and
one task per GPU in step 0. The hung job's ranks all wait in the same
all_reduce, except the scenario's straggler rank, which is stuck in
uninterruptible I/O (ps state D) reading its next batch from a hung shared
filesystem: the stack py-spy shows for it is in the data loader, not in the
collective. Process ids are derived from the job id and node name.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from cockpit.backends._demo.state import RUNNING, SimJob

PYTHON = "/usr/bin/python3"
PY_VERSION = "Python v3.11.9 (/usr/bin/python3.11)"


@dataclass(frozen=True, slots=True)
class Proc:
    pid: int
    job_id: int
    step: str  # batch, extern, 0
    local: str  # LOCALID, "-" outside step 0
    glob: str  # GLOBALID
    stat: str  # ps STAT
    start: int  # epoch seconds
    args: str
    gpu: int | None = None
    rank: int | None = None
    world: int = 0
    python: bool = False


def _base(job_id: int, node: str) -> int:
    return 10_000 + (zlib.crc32(f"{job_id}/{node}".encode()) % 38_000) * 100


def task_command(job: SimJob) -> tuple[str, bool]:
    """The program each task of ``job`` runs, and whether it is Python."""
    if job.script:
        line = next((ln for ln in job.script.splitlines() if ln.startswith("srun ")), "srun true")
        words = line.split()[1:]
        while words and words[0].startswith("-"):  # srun's own options
            words.pop(0)
        return " ".join(words) or "true", bool(words) and "python" in words[0]
    if job.command == "bash":
        return "/bin/bash", False
    if job.name == "llama-70b-pretrain":
        return (f"{PYTHON} -u pretrain_gpt.py --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 "
                "--num-layers 80 --hidden-size 8192 --seq-length 4096 --micro-batch-size 1 "
                f"--global-batch-size 1024 --data-path /datasets/redpajama/tokens --save {job.work_dir}/ckpt"), True
    if not job.gpus_per_node:
        return f"{PYTHON} tokenize.py --workers 32 --input /datasets/raw --output {job.work_dir}/tokens", True
    return f"{PYTHON} -u train.py --config {job.work_dir}/configs/{job.name}.yaml", True


def job_procs(sc: Any, job: SimJob, node: str, now: int) -> list[Proc]:
    """The processes of ``job`` on ``node`` (none when it is not running there)."""
    if job.state != RUNNING or node not in job.nodes:
        return []
    base, start = _base(job.job_id, node), job.start_time or now
    first = job.nodes[0] == node
    command, python = task_command(job)
    out: list[Proc] = []
    interactive = job.command == "bash" and not job.script
    if first and not interactive:
        out.append(Proc(base, job.job_id, "batch", "0", "0", "Ss", start,
                        f"/bin/bash /var/spool/slurmd/job{job.job_id}/slurm_script"))
        out.append(Proc(base + 1, job.job_id, "batch", "-", "-", "Sl", start + 1, f"srun {command}"))
    out.append(Proc(base + 2, job.job_id, "extern", "-", "-", "S", start - 1, "sleep 100000000"))
    tasks = 1 if interactive else max(job.gpus_per_node, 1)
    gpus = job.gpu_idx.get(node, ())
    world = tasks * len(job.nodes)
    for local in range(tasks):
        rank = job.nodes.index(node) * tasks + local
        stat = "Ss+" if interactive else "Rl" if python else "Sl"
        if job.job_id == sc.hung_job_id:
            stat = "Dl" if rank == sc.straggler_rank else "Sl"
        gpu = gpus[local] if local < len(gpus) else (local if job.script and job.gpus_per_node else None)
        out.append(Proc(base + 10 + local, job.job_id, "0", str(local), str(rank), stat, start + 4, command,
                        gpu, rank, world, python))
    return out


def node_procs(sc: Any, node: str, now: int, extra: tuple[int, ...] = ()) -> list[Proc]:
    """Every job process on ``node``: the jobs holding its CPUs, plus ``extra`` job ids
    (submissions that hold no allocation)."""
    ids = sorted(set(sc.sim.nodes[node].cpu_alloc) | set(extra))
    return [p for j in ids if (job := sc.sim.jobs.get(j)) is not None for p in job_procs(sc, job, node, now)]


def listpids(procs: list[Proc], job_id: int) -> tuple[int, bytes, bytes]:
    """``scontrol listpids JOB`` on the node (the layout of scontrol 22.05-24.11)."""
    mine = [p for p in procs if p.job_id == job_id]
    if not mine:
        return 1, b"", f"scontrol: error: Job {job_id} does not exist on this node.\n".encode()
    lines = ["PID      JOBID    STEPID   LOCALID GLOBALID"]
    lines += [f"{p.pid:<8d} {p.job_id:<8d} {p.step:<8s} {p.local:<7s} {p.glob:<8s}" for p in mine]
    return 0, ("\n".join(lines) + "\n").encode(), b""


def ps(procs: list[Proc], pids: list[int], now: int) -> tuple[int, bytes, bytes]:
    """``ps -o pid=,stat=,etimes=,args= -p PIDS``: exit 1 when none of them exists."""
    want = set(pids)
    rows = [f"{p.pid:7d} {p.stat:<4s} {max(0, now - p.start):7d} {p.args}"
            for p in sorted(procs, key=lambda p: p.pid) if p.pid in want]
    return (0 if rows else 1), ("\n".join(rows) + "\n").encode() if rows else b"", b""


def environ(sc: Any, node: str, proc: Proc) -> bytes:
    """``/proc/PID/environ``: NUL-separated, with the rank variables of a task."""
    env = {"SLURM_JOB_ID": str(proc.job_id), "SLURMD_NODENAME": node, "HOME": "/root" if proc.step == "extern" else "",
           "COCKPIT_DEMO": "SIMULATED"}
    if proc.rank is not None:
        job = sc.sim.jobs[proc.job_id]
        env.update(SLURM_PROCID=str(proc.rank), SLURM_LOCALID=proc.local, SLURM_NTASKS=str(proc.world),
                   RANK=str(proc.rank), LOCAL_RANK=proc.local, WORLD_SIZE=str(proc.world),
                   MASTER_ADDR=job.nodes[0], MASTER_PORT="29500")
        if proc.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in job.gpu_idx.get(node, (proc.gpu,)))
        if proc.job_id == sc.hung_job_id:
            env.update(NCCL_ASYNC_ERROR_HANDLING="0", NCCL_TIMEOUT="1800", NCCL_IB_TIMEOUT="22")
    return b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items() if v)


_HEALTHY = (
    ("all_reduce", "torch/distributed/distributed_c10d.py:2501"),
    ("wrapper", "torch/distributed/c10d_logger.py:83"),
    ("_allreduce_word_embedding_grads", "megatron/core/distributed/finalize_model_grads.py:141"),
    ("finalize_model_grads", "megatron/core/distributed/finalize_model_grads.py:307"),
    ("forward_backward_pipelining_without_interleaving", "megatron/core/pipeline_parallel/schedules.py:1549"),
)
_STRAGGLER = (
    ("_read", "megatron/core/datasets/indexed_dataset.py:281"),
    ("get", "megatron/core/datasets/indexed_dataset.py:549"),
    ("__getitem__", "megatron/core/datasets/gpt_dataset.py:214"),
    ("fetch", "torch/utils/data/_utils/fetch.py:52"),
    ("_next_data", "torch/utils/data/dataloader.py:757"),
    ("__next__", "torch/utils/data/dataloader.py:701"),
    ("get_batch", "pretrain_gpt.py:154"),
    ("forward_step", "pretrain_gpt.py:211"),
    ("forward_step", "megatron/core/pipeline_parallel/schedules.py:275"),
    ("forward_backward_pipelining_without_interleaving", "megatron/core/pipeline_parallel/schedules.py:1503"),
)
_OUTER = (
    ("train_step", "megatron/training/training.py:740"),
    ("train", "megatron/training/training.py:1247"),
    ("pretrain", "megatron/training/training.py:360"),
    ("<module>", "pretrain_gpt.py:264"),
)
_BUSY = (
    ("_flash_attn_forward", "flash_attn/flash_attn_interface.py:91"),
    ("forward", "flash_attn/flash_attn_interface.py:835"),
    ("apply", "torch/autograd/function.py:575"),
    ("_call_impl", "torch/nn/modules/module.py:1747"),
    ("train_one_step", "train.py:188"),
    ("main", "train.py:241"),
    ("<module>", "train.py:260"),
)


def pyspy_dump(sc: Any, proc: Proc | None, pid: int) -> tuple[int, bytes, bytes]:
    """``py-spy dump --pid PID``, py-spy 0.4's layout (Process, Python, Thread, frames)."""
    if proc is None:
        return 1, b"", f"Error: Failed to open process {pid}: No such process (os error 3)\n".encode()
    if not proc.python:
        return 1, b"", b"Error: Failed to find python version from target process\n"
    if proc.job_id == sc.hung_job_id:
        frames, state = (_STRAGGLER if proc.rank == sc.straggler_rank else _HEALTHY) + _OUTER, "idle"
    else:
        frames, state = _BUSY, "active"
    lines = [f"Process {proc.pid}: {proc.args}", PY_VERSION, "", f'Thread {proc.pid} ({state}): "MainThread"']
    lines += [f"    {fn} ({where})" for fn, where in frames]
    lines += [f'Thread {proc.pid + 7} (idle): "Thread-2 (_pin_memory_loop)"',
              "    wait (threading.py:331)", "    get (queue.py:180)",
              "    do_one_step (torch/utils/data/_utils/pin_memory.py:20)",
              "    _pin_memory_loop (torch/utils/data/_utils/pin_memory.py:59)",
              "    run (threading.py:982)", "    _bootstrap_inner (threading.py:1045)",
              "    _bootstrap (threading.py:1002)"]
    return 0, ("\n".join(lines) + "\n").encode(), b""
