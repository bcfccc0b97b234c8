"""A job's processes on each of its nodes: ``scontrol listpids JOBID`` run on
the node itself, with process state from ``ps`` and the GPU index from
nvidia-smi's compute-apps where a GPU driver answers. The node is reached
through a "pool": anything with ``run(node, argv, timeout=)`` returning a
CommandResult, an SshPool (headless) or the backend's probe runner (the TUI:
SSH on a real cluster, the simulated nodes in the demo).

No Textual here: the TUI's job detail and headless commands both call
:func:`job_processes`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from typing import TYPE_CHECKING, Any

from cockpit.errors import CockpitError

if TYPE_CHECKING:  # anything with run(node, argv): an SshPool, or a context's probes
    from cockpit.remote.pool import SshPool


@dataclass(frozen=True, slots=True)
class JobProcess:
    node: str
    pid: int
    step: str  # "batch", "0", "extern" ...
    state: str = ""  # ps STAT: R running, S sleeping, D uninterruptible (often a hung I/O), Z zombie
    elapsed_s: int | None = None
    command: str = ""
    gpu_index: int | None = None
    rank: str = ""  # Slurm's global task id of an srun step's task: the rank that a runbook names


def parse_listpids(text: str) -> list[tuple[int, str]]:
    """(pid, step) pairs from ``scontrol listpids`` output (header skipped)."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].isdecimal():
            out.append((int(parts[0]), parts[2]))
    return out


def parse_ranks(text: str) -> dict[int, str]:
    """pid -> GLOBALID of the tasks of srun steps in ``scontrol listpids`` output. The
    batch script shows GLOBALID 0 too (seen on 22.05), so batch and extern steps get none."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0].isdecimal() and parts[2] not in ("batch", "extern") and parts[4].isdecimal():
            out[int(parts[0])] = parts[4]
    return out


def parse_ps(text: str) -> dict[int, tuple[str, int | None, str]]:
    """pid -> (stat, elapsed seconds, args) from ``ps -o pid=,stat=,etimes=,args=``."""
    out = {}
    for line in text.splitlines():
        parts = line.split(None, 3)
        if len(parts) >= 3 and parts[0].isdecimal():
            et = int(parts[2]) if parts[2].isdecimal() else None
            out[int(parts[0])] = (parts[1], et, parts[3] if len(parts) > 3 else "")
    return out


def parse_compute_apps(apps: str, gpus: str) -> dict[int, int]:
    """pid -> GPU index from ``--query-compute-apps=pid,gpu_uuid`` and
    ``--query-gpu=index,uuid`` (both ``--format=csv,noheader``)."""
    index = {}
    for line in gpus.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdecimal():
            index[parts[1]] = int(parts[0])
    out = {}
    for line in apps.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdecimal() and parts[1] in index:
            out[int(parts[0])] = index[parts[1]]
    return out


async def _gpu_map(pool: SshPool, node: str) -> dict[int, int]:
    try:
        apps = await pool.run(node, ["nvidia-smi", "--query-compute-apps=pid,gpu_uuid", "--format=csv,noheader"])
        gpus = await pool.run(node, ["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"])
    except CockpitError:
        return {}
    if not (apps.ok and gpus.ok):
        return {}  # no driver, or not a GPU node: processes still listed, GPU unknown
    return parse_compute_apps(apps.text(), gpus.text())


async def node_processes(pool: SshPool, node: str, job_id: int) -> list[JobProcess]:
    """The job's processes on one node. Raises CockpitError (one line) when the
    node cannot be reached or scontrol refuses."""
    # SLURMD_NODENAME picks the right slurmd where one host runs several (slurmd -N)
    res = await pool.run(node, ["env", f"SLURMD_NODENAME={node}", "scontrol", "listpids", str(job_id)])
    if not res.ok:
        first = (res.err_text() or res.text()).strip().splitlines()
        raise CockpitError(f"{node}: scontrol listpids {job_id}: {first[0] if first else 'exit ' + str(res.returncode)}")
    pids, ranks = parse_listpids(res.text()), parse_ranks(res.text())
    if not pids:
        return []
    ps = await pool.run(node, ["ps", "-o", "pid=,stat=,etimes=,args=", "-p", ",".join(str(p) for p, _ in pids)])
    info = parse_ps(ps.text())
    gpu = await _gpu_map(pool, node)
    out = []
    for pid, step in pids:
        stat, et, args = info.get(pid, ("gone", None, ""))
        out.append(JobProcess(node, pid, step, stat, et, args, gpu.get(pid), ranks.get(pid, "")))
    return out


async def job_processes(pool: SshPool, job_id: int, nodes: Iterable[str]) -> tuple[dict[str, list[JobProcess]], dict[str, str]]:
    """({node: processes}, {node: error}) for every node of the job, in parallel."""
    nodes = list(dict.fromkeys(nodes))
    done = await asyncio.gather(*(node_processes(pool, n, job_id) for n in nodes), return_exceptions=True)
    procs, errors = {}, {}
    for n, r in zip(nodes, done):
        if isinstance(r, CockpitError):
            errors[n] = str(r)
        elif isinstance(r, BaseException):
            raise r
        else:
            procs[n] = r
    return procs, errors


def procs_to_json(job_id: int, procs: dict[str, list[JobProcess]], errors: dict[str, str]) -> dict:
    """The ``cockpit job procs --json`` object: processes per node, errors per node."""
    return {"job_id": job_id, "nodes": {n: [asdict(p) for p in ps] for n, ps in procs.items()}, "errors": dict(errors)}
