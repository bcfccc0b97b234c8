"""Simulated ``sbatch``: the ``#SBATCH`` lines cockpit's plugins write become a demo job.

A submitted job runs on the nodes its script asks for (``--nodelist``/``-w``,
else the first usable nodes of ``--partition``), without taking them from the
scenario's jobs. It is RUNNING at the first squeue look and COMPLETED at the
second: counted, not timed, so a check through the demo is as quick and as
repeatable as its own polling. Its ``--output`` file (``%j`` ... expanded)
appears in the demo's file table when it starts and is filled when it ends:
an NCCL benchmark job (name ``cockpit-nccl*``) gets a simulated nccl-tests or
torch_bench table, a pre-flight job (``cockpit-storage``, ``cockpit-burnin``)
what its script prints on each node (_demo/preflight.py), anything else one
line saying it did not really run.

One simplification: a script with a node list but no ``--partition`` runs in
the partition that holds those nodes (Slurm would use the default partition
and refuse nodes outside it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from cockpit.backends._demo import nccl, preflight
from cockpit.backends._demo.gpus import short_bus
from cockpit.backends._demo.state import RUNNING, SimJob
from cockpit.backends.slurm_text import duration_minutes
from cockpit.errors import CommandFailed, ParseError
from cockpit.hostlist import collapse, expand

ARGV = ["sbatch", "--parsable"]
_SHORT = {"-w": "nodelist", "-N": "nodes", "-p": "partition", "-o": "output", "-J": "job-name", "-t": "time",
          "-e": "error", "-n": "ntasks", "-G": "gpus", "-A": "account", "-q": "qos", "-D": "chdir"}
_FLAGS = {"exclusive", "requeue", "no-requeue", "parsable", "wait", "overcommit", "hold"}


def _refuse(why: str) -> CommandFailed:
    return CommandFailed(ARGV, 1, f"sbatch: error: Batch job submission failed: {why}")


def directives(script: str) -> dict[str, str]:
    """``#SBATCH`` options as {long name: value} ("" for flags). sbatch stops reading
    them at the first line that is not a comment, and so does this."""
    opts: dict[str, str] = {}
    for line in script.splitlines()[1:]:
        text = line.strip()
        if text and not text.startswith("#"):
            break
        if not text.startswith("#SBATCH"):
            continue
        words = text[len("#SBATCH"):].split()
        i = 0
        while i < len(words) and not words[i].startswith("#"):
            w = words[i]
            if w.startswith("--"):
                key, eq, val = w[2:].partition("=")
                if not eq and key not in _FLAGS and i + 1 < len(words):
                    val, i = words[i + 1], i + 1
                opts[key] = val
            elif w[:2] in _SHORT:
                val = w[2:]
                if not val and i + 1 < len(words):
                    val, i = words[i + 1], i + 1
                opts[_SHORT[w[:2]]] = val
            i += 1
    return opts


def _int(opts: dict[str, str], key: str, default: int) -> int:
    raw = opts.get(key, "")
    head = raw.split("-", 1)[0]  # --nodes=2-4: at least 2
    if not raw:
        return default
    if not head.isdecimal():
        raise CommandFailed(ARGV, 1, f"sbatch: error: Invalid numeric value \"{raw}\" for --{key}.")
    return int(head)


def parse_bytes(text: str) -> int:
    """nccl-tests' size syntax: 8, 512K, 1M, 16G (powers of 1024)."""
    text = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(text[-1:], 1)
    digits = text[:-1] if mult > 1 else text
    return int(digits) * mult if digits.isdecimal() else 0


@dataclass
class Submission:
    job_id: int
    looks: int = 0  # squeue looks at it so far: RUNNING at the first, COMPLETED at the second


class Submissions:
    """The jobs submitted to the demo, and how they run."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._jobs: dict[int, Submission] = {}

    def running_on(self, node: str) -> tuple[int, ...]:
        sim = self._backend._sc.sim
        return tuple(j for j in self._jobs if (job := sim.jobs.get(j)) is not None
                     and job.state == RUNNING and node in job.nodes)

    def submit(self, script: str, now: int) -> int:
        """Create the job; its id. Raises CommandFailed with sbatch's words."""
        if not script.startswith("#!"):
            raise CommandFailed(ARGV, 1, "sbatch: error: This does not look like a batch script.  The first line "
                                         "must start with #! followed by the path to an interpreter.")
        opts = directives(script)
        sim = self._backend._sc.sim
        try:
            wanted = expand(opts.get("nodelist") or None)
        except ParseError:
            raise _refuse("Invalid node name specified") from None
        if any(n not in sim.nodes for n in wanted):
            raise _refuse("Invalid node name specified")
        part = self._partition(opts.get("partition"), wanted)
        if opts.get("reservation"):
            raise _refuse("Requested reservation is invalid")
        count = max(_int(opts, "nodes", 1), len(wanted), 1)
        try:
            limit = duration_minutes(opts["time"]) if opts.get("time") else None
        except ParseError:
            raise CommandFailed(ARGV, 1, "sbatch: error: Invalid --time specification") from None
        job = self._job(opts, part, count, limit if limit is not None else part.max_time or 60, now)
        job.script = script
        self._place(job, wanted, part, now)
        sim.jobs[job.job_id] = job
        self._jobs[job.job_id] = Submission(job.job_id)
        if job.state == RUNNING:
            self._backend._files.put(job.stdout, "", now)  # Slurm creates it when the job starts
        return job.job_id

    def _partition(self, name: str | None, nodes: tuple[str, ...]) -> Any:
        parts = self._backend._sc.sim.partitions
        if name:
            if name not in parts:
                raise _refuse("Invalid partition name specified")
            if any(n not in parts[name].nodes for n in nodes):
                raise _refuse("Requested node configuration is not available")
            return parts[name]
        holding = [p for p in parts.values() if all(n in p.nodes for n in nodes)]
        if not holding:
            raise _refuse("Requested node configuration is not available")
        return next((p for p in holding if p.is_default), holding[0])

    def _job(self, opts: dict[str, str], part: Any, count: int, limit: int, now: int) -> SimJob:
        backend = self._backend
        user = backend.operator
        home = f"/home/{user}"
        gpus = _int(opts, "gpus-per-node", 0)
        tasks = _int(opts, "ntasks-per-node", 1)
        job = SimJob(job_id=backend._sim.new_id(), name=opts.get("job-name") or "sbatch", user=user,
                     account=opts.get("account") or "root", partition=part.name, node_count=count,
                     gpus_per_node=gpus, cpus_per_node=max(tasks, 1), time_limit=limit, submit_time=now,
                     work_dir=opts.get("chdir") or home)
        out = opts.get("output") or "slurm-%j.out"
        for key, val in (("%%", "\0"), ("%j", str(job.job_id)), ("%x", job.name), ("%u", user)):
            out = out.replace(key, val)
        job.stdout = os.path.join(job.work_dir, out.replace("\0", "%"))
        return job

    def _place(self, job: SimJob, wanted: tuple[str, ...], part: Any, now: int) -> None:
        sim = self._backend._sc.sim
        # Slurm adds nodes of the partition to a node list shorter than --nodes
        extra = [n for n in part.nodes if n not in wanted and sim.nodes[n].available]
        nodes = list(wanted) + extra[: max(job.node_count - len(wanted), 0)]
        bad = [n for n in nodes if not sim.nodes[n].available]
        if bad or len(nodes) < job.node_count:
            job.reason = f"ReqNodeNotAvail, UnavailableNodes:{collapse(bad)}" if bad else "Resources"
            return
        job.nodes, job.state, job.reason, job.start_time = nodes, RUNNING, "None", now

    def state(self, job_id: int, now: int) -> tuple[str, str] | None:
        """(state, reason) of a submitted job, moving it on; None for any other job."""
        sub = self._jobs.get(job_id)
        if sub is None:
            return None
        job = self._backend._sc.sim.jobs.get(job_id)
        if job is None:
            return "GONE", ""
        if job.state == RUNNING:
            sub.looks += 1
            if sub.looks >= 2:
                self._backend._sim.finish(job, "COMPLETED", now, exit_code=0)
                self._backend._files.put(job.stdout, output_of(self._backend._sc, job), now)
        return job.state, "" if job.reason == "None" else job.reason


def _bench_args(job: SimJob) -> tuple[str, list[str]]:
    """The benchmark program of the script's srun line and its arguments."""
    line = next((ln for ln in job.script.splitlines() if ln.startswith("srun ")), "srun true")
    words = line.split()[1:]
    while words and words[0].startswith("-"):
        words.pop(0)
    return (words[0] if words else "true"), words[1:]


def _flag(args: list[str], name: str, default: str) -> str:
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else default


def output_of(sc: Any, job: SimJob) -> str:
    """The output a finished submitted job leaves in its --output file."""
    if job.name in preflight.NAMES:
        return preflight.job_output(sc, job)
    if not job.name.startswith("cockpit-nccl"):
        return (f"cockpit demo: SIMULATED batch job {job.job_id} ({job.name}): the demo does not run "
                "batch scripts; it completed at once\n")
    prog, args = _bench_args(job)
    tasks = job.cpus_per_node
    bw = nccl.job_busbw(job.nodes, sc.slow_nccl_node, job.job_id)
    buses = [short_bus(i) for i in range(max(tasks, 1))]
    if any("torch_bench" in a for a in [prog, *args]):
        return nccl.torch_output(job.nodes, tasks, bw, job.job_id, backend=_flag(args, "--backend", "nccl"),
                                 lo=parse_bytes(_flag(args, "--min-bytes", "1M")),
                                 hi=parse_bytes(_flag(args, "--max-bytes", "1G")),
                                 iters=int(_flag(args, "--iters", "20")), warmup=int(_flag(args, "--warmup", "5")),
                                 bus_ids=buses)
    return nccl.nccl_tests_output(job.nodes, tasks, bw, job.job_id, binary=prog,
                                  lo=parse_bytes(_flag(args, "-b", "8")), hi=parse_bytes(_flag(args, "-e", "128M")),
                                  factor=int(_flag(args, "-f", "2")), iters=int(_flag(args, "-n", "20")),
                                  warmup=int(_flag(args, "-w", "5")), check=int(_flag(args, "-c", "1")),
                                  bus_ids=buses)
