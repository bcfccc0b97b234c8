"""The simulated cluster's Slurm daemon logs: slurmctld's on the controller (the
probe runner's node "") and each node's slurmd log, at the paths ``scontrol show
config`` names (_demo/describe.py).

Every line is made from the simulation's own state when the file is read, so the
logs tell what squeue, sinfo and sacct show: a job's submission, its allocation
and its end at the job's own times, the drains with their reasons at their
reason times, the down node's lost heartbeat; on a node, slurmd's start after the
node's boot and the steps of the jobs that ran there. The line formats are
Slurm's (LogTimeFormat=iso8601_ms), checked against the real excerpts in
tests/data/slurm_logs (SOURCES.md there names them). The log holds the newest
MAX_LINES lines, as a rotated one does; the same state and clock give the same
bytes.
"""

from __future__ import annotations

import zlib
from typing import Any

from cockpit.backends._demo.describe import (
    CONTROLLER_ADDR, CTLD_LOG, SLURMD_LOG, SLURMD_UP_S, UID, is_batch, iso, node_addr, slurm_version,
)
from cockpit.backends._demo.files import DemoFile, _inode
from cockpit.backends._demo.state import CPUS_PER_NODE, MEMORY_MB, RUNNING, SimJob
from cockpit.hostlist import collapse

MAX_LINES = 2000
Event = tuple[float, str]


def _render(events: list[Event], now: int) -> tuple[bytes, int]:
    """The newest MAX_LINES events up to ``now`` as log lines, and the file's mtime. The
    milliseconds are made up but grow within a second, as the daemon wrote them."""
    kept = sorted((e for e in events if e[0] <= now), key=lambda e: e[0])[-MAX_LINES:]
    out, prev, k = [], -1, 0
    for t, text in kept:
        sec = int(t)
        k, prev = (k + 1 if sec == prev else 0), sec
        ms = min(zlib.crc32(str(sec).encode()) % 600 + 7 * k, 999)
        out.append(f"[{iso(sec)}.{ms:03d}] {text}\n")
    return "".join(out).encode(), int(kept[-1][0]) if kept else now


def job_ref(j: SimJob) -> str:
    """A job as slurmctld names it in a log line (``%pJ``): ``JobId=7``, ``JobId=4_2(9)``
    for an array task, ``JobId=4_*`` for the array's pending rest, ``JobId=5+1(6)`` for a
    heterogeneous job's component."""
    if j.het_job_id is not None:
        return f"JobId={j.het_job_id}+{j.het_offset}({j.job_id})"
    if j.array_job_id is not None:
        return f"JobId={j.array_job_id}_*" if j.array_task_id is None else f"JobId={j.array_job_id}_{j.array_task_id}({j.job_id})"
    return f"JobId={j.job_id}"


def _usec(j: SimJob) -> int:
    return 400 + zlib.crc32(f"usec{j.job_id}".encode()) % 2600


# -- slurmctld ----------------------------------------------------------------------
def _job_events(j: SimJob) -> list[Event]:
    out: list[Event] = []
    if j.het_job_id is None and (j.array_job_id is None or j.job_id == j.array_job_id):
        if is_batch(j):
            out.append((j.submit_time, f"_slurm_rpc_submit_batch_job: JobId={j.job_id} InitPrio={j.priority} usec={_usec(j)}"))
        else:
            out.append((j.submit_time, f"sched: _slurm_rpc_allocate_resources JobId={j.job_id} NodeList=(null) usec={_usec(j)}"))
    if j.start_time is not None and j.nodes:
        out.append((j.start_time, f"sched: Allocate {job_ref(j)} NodeList={collapse(j.nodes)} "
                                  f"#CPUs={j.cpus_per_node * len(j.nodes)} Partition={j.partition}"))
    if j.end_time is None or j.state == RUNNING:
        return out
    if j.state in ("COMPLETED", "FAILED"):
        out += [(j.end_time, f"_job_complete: {job_ref(j)} WEXITSTATUS {j.exit_code or 0}"),
                (j.end_time, f"_job_complete: {job_ref(j)} done")]
    elif j.state == "TIMEOUT":
        out.append((j.end_time, f"Time limit exhausted for {job_ref(j)}"))
    elif j.state == "CANCELLED":
        out.append((j.end_time, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={j.job_id} uid 0"))
    return out


def _busy_at(sc: Any, node: str, t: int) -> bool:
    """Did a job hold ``node`` at time ``t``?"""
    return any(node in j.nodes and j.start_time is not None and j.start_time <= t
               and (j.end_time is None or j.end_time > t) for j in sc.sim.jobs.values())


def _node_events(sc: Any, n: Any) -> list[Event]:
    if not n.reason or not (n.drain or n.down) or n.reason_time is None:
        return []
    t = n.reason_time
    if n.not_responding and n.reason_user == "slurm":  # slurmctld downed it for silence
        return [(t - 240, f"error: Nodes {n.name} not responding"),
                (t, f"error: Nodes {n.name} not responding, setting DOWN")]
    state = "DOWN" if n.down else "DRAINING" if _busy_at(sc, n.name, t) else "DRAINED"
    return [(t, f"update_node: node {n.name} reason set to: {n.reason}"),
            (t, f"update_node: node {n.name} state set to {state}")]


def ctld_log(sc: Any, now: int) -> tuple[bytes, int]:
    """slurmctld.log as it stands at ``now``: (its text, its mtime)."""
    events: list[Event] = []
    for j in sc.sim.jobs.values():
        events += _job_events(j)
    for n in sc.sim.nodes.values():
        events += _node_events(sc, n)
    return _render(events, now)


# -- slurmd -------------------------------------------------------------------------
def _memcg(step: str, mb: int) -> str:
    return f"[{step}] task/cgroup: _memcg_initialize: {'job' if step.endswith('extern') else 'step'}: " \
           f"alloc={mb}MB mem.limit={mb}MB memsw.limit=unlimited"


def _step_events(sc: Any, j: SimJob, node: str) -> list[Event]:
    s, first, jid = j.start_time or 0, j.nodes[0] == node, j.job_id
    batch = is_batch(j) and first
    launcher = node_addr(sc, j.nodes[0]) if is_batch(j) else CONTROLLER_ADDR  # srun runs on the batch host, or on the login node
    port = 30_000 + zlib.crc32(f"port{jid}".encode()) % 30_000
    mb = j.mem_per_node
    out: list[Event] = [(s - 1, _memcg(f"{jid}.extern", mb))]
    if batch:
        out += [(s, f"Launching batch JobId={jid} for UID {UID}"), (s, _memcg(f"{jid}.batch", mb))]
    out += [(s + 3, f"launch task StepId={jid}.0 request from UID:{UID} GID:{UID} HOST:{launcher} PORT:{port}"),
            (s + 4, _memcg(f"{jid}.0", mb))]
    if j.end_time is None or j.state == RUNNING:
        return out
    e, when = j.end_time, iso(j.end_time)
    why = {"TIMEOUT": " DUE TO TIME LIMIT", "CANCELLED": ""}.get(j.state)
    if why is not None:
        what = f"JOB {jid}" if batch else f"STEP {jid}.0"
        out.append((e, f"[{jid}.{'batch' if batch else '0'}] error: *** {what} ON {node} CANCELLED AT {when}{why} ***"))
    out.append((e, f"[{jid}.0] done with job"))
    if batch:
        rc = 15 if why is not None else (j.exit_code or 0) * 256
        out += [(e + 1, f"[{jid}.batch] {job_ref(j)} completed with slurm_rc = 0, job_rc = {rc}"),
                (e + 1, f"[{jid}.batch] done with job")]
    return out + [(e + 1, f"[{jid}.extern] done with job")]


def slurmd_log(sc: Any, node: str, now: int) -> tuple[bytes, int]:
    """``node``'s slurmd log at ``now``: (its text, its mtime)."""
    n = sc.sim.nodes[node]
    up = n.boot_time + SLURMD_UP_S
    events: list[Event] = [
        (up - 2, f"slurmd version {slurm_version()} started"),
        (up - 1, f"gpu/nvml: _get_system_gpu_list_nvml: {n.gpus} GPU system device(s) detected"),
        (up, f"CPUs={CPUS_PER_NODE} Boards=1 Sockets=2 Cores={CPUS_PER_NODE // 4} Threads=2 Memory={MEMORY_MB} "
             f"TmpDisk=0 Uptime={SLURMD_UP_S} CPUSpecList=(null) FeaturesAvail=(null) FeaturesActive=(null)"),
    ]
    for j in sc.sim.jobs.values():
        if node in j.nodes and j.start_time is not None and j.start_time >= up:
            events += _step_events(sc, j, node)
    return _render(events, now)


def log_file(sc: Any, node: str, path: str, now: int) -> DemoFile | None:
    """The daemon log at ``path`` on ``node`` ("" = the controller); None where there is none."""
    if not node:
        got = ctld_log(sc, now) if path == CTLD_LOG else None
    else:
        got = slurmd_log(sc, node, now) if path == SLURMD_LOG.replace("%n", node) else None
    return None if got is None else DemoFile(got[0], got[1], _inode(f"{node}:{path}"))
