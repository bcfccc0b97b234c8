"""The demo's accounting and scheduler views: what slurmdbd, sprio, sacctmgr and
scontrol show reservation would say about the simulated cluster.

Two weeks of finished jobs (made once from the seed: the same history for the
same seed and start), the simulated scheduler's own finished jobs, node events
(the Xid node drained 3 times in 14 days, twice for Xid 79: a flapping node;
the down node; the nodes drained now), the train partition's per-user GPU limit
as the QOS ``normal``'s ``MaxTRESPU gres/gpu=64`` with each user's usage, and a
maintenance reservation on one leaf switch starting in three hours. GPU
utilisation is recorded (``gres/gpuutil``), so the demo shows the idle GPU time
inside allocations too. Nothing here runs a program.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from cockpit.backends.accounting import Answer, JobQuery
from cockpit.models.accounting import (
    JobRecord, Limit, LimitsState, NodeEvent, PriorityFactors, QosLimits, QueryCost, Reservation, Share, StepRecord,
)

DAYS = 14
SOURCE = "demo (simulated accounting)"
_OUTCOMES = (("COMPLETED", 70), ("FAILED", 10), ("CANCELLED", 10), ("TIMEOUT", 6), ("NODE_FAIL", 2),
             ("OUT_OF_MEMORY", 2))
_USERS = (("alice", "ml"), ("bob", "ml"), ("carol", "vision"), ("dave", "speech"), ("erin", "infra"))


def _cost(what: str, n: int) -> tuple[QueryCost, ...]:
    return (QueryCost(f"{what} (simulated)", 0.0, 0, n, ("demo",)),)


class DemoAccounting:
    """sacct/sacctmgr/sshare/assoc_mgr answered from the simulated cluster."""

    source = SOURCE
    storage = "accounting_storage/slurmdbd (simulated)"
    tracked_tres = "cpu,mem,node,gres/gpu,gres/gpuutil"

    def __init__(self, backend: Any) -> None:
        self.b = backend
        self.clock = backend.clock
        sc = backend._sc  # noqa: SLF001 - the demo's own scenario
        self.start = int(sc.sim.time) - DAYS * 86400
        self._history = self._make_history(backend.seed, sc)
        self._events = self._make_events(sc)

    # -- made once ------------------------------------------------------------------
    def _make_history(self, seed: int, sc: Any) -> list[JobRecord]:
        """Jobs one after the other on each node (a node runs one of them at a time, so
        no period is booked beyond the node's GPUs), ending before the first job the
        simulated scheduler runs there."""
        rng = random.Random(seed * 7919 + 11)
        live_start: dict[str, int] = {}
        for j in sc.sim.jobs.values():
            for n in j.nodes:
                if j.start_time is not None:
                    live_start[n] = min(live_start.get(n, j.start_time), j.start_time)
        out: list[JobRecord] = []
        now = int(sc.sim.time)
        for node in sc.sim.nodes.values():
            t, stop = self.start, min(now - 3600, live_start.get(node.name, now))
            busy = rng.uniform(0.45, 0.85)  # this node's share of time with a job
            while True:
                limit = rng.choice((60, 240, 720, 1440))
                state = rng.choices([s for s, _ in _OUTCOMES], [w for _, w in _OUTCOMES])[0]
                if node.name == sc.xid_node and rng.random() < 0.5:
                    state = "FAILED"  # the flapping node fails its jobs
                run = limit * 60 if state == "TIMEOUT" else rng.randint(300, limit * 60)
                t += int(run * (1 - busy) / busy * rng.uniform(0.3, 1.7))  # the idle gap before it
                if t + run > stop:
                    break
                out.append(self._job(rng, 400_000 + len(out), node, t, run, limit, state))
                t += run
        return sorted(out, key=lambda j: j.start_time or 0)

    @staticmethod
    def _job(rng: random.Random, job_id: int, node: Any, start: int, run: int, limit: int, state: str) -> JobRecord:
        user, account = rng.choice(_USERS)
        gpus = float(rng.choice((node.gpus, node.gpus, node.gpus // 2 or 1)))
        steps = (StepRecord("batch", "batch", state, elapsed_s=run, total_cpu_s=run * rng.uniform(0.2, 6),
                            tres_in_max={"mem": rng.uniform(2e4, 9e5)},
                            tres_in_ave={"gres/gpuutil": rng.uniform(15, 98)}),)
        return JobRecord(
            job_id=str(job_id), job_id_raw=job_id, name=rng.choice(("pretrain", "finetune", "eval", "sweep", "nccl-check")),
            user=user, account=account, partition=rng.choice(node.partitions), qos="normal", state=state,
            exit_code={"FAILED": rng.choice((1, 2, 3, 137))}.get(state, 0),
            exit_signal=9 if state == "OUT_OF_MEMORY" else None, submit_time=start - rng.randint(0, 3600),
            start_time=start, end_time=start + run, elapsed_s=run, time_limit=limit, nodes=(node.name,), node_count=1,
            alloc_tres={"cpu": 32.0, "mem": 512_000.0, "node": 1.0, "gres/gpu": gpus}, steps=steps)

    def _make_events(self, sc: Any) -> list[NodeEvent]:
        now = int(sc.sim.time)
        day = 86400
        flap = sc.xid_node
        out = [NodeEvent(flap, now - 11 * day, now - 11 * day + 4 * 3600, "DRAIN", "Xid 79: GPU has fallen off the bus", "root"),
               NodeEvent(flap, now - 6 * day, now - 6 * day + 2 * 3600, "DOWN*+DRAIN", "Not responding", "slurm"),
               NodeEvent(flap, now - 3 * day, now - 3 * day + 3 * 3600, "DRAIN", "Xid 79 again after reseat", "root"),
               NodeEvent(sc.down_node, now - 9 * day, now - 9 * day + 1800, "REBOOT_ISSUED", "kernel update", "ivan")]
        for node in sc.sim.nodes.values():  # what is drained or down now
            if node.reason and (node.drain or node.down):
                out.append(NodeEvent(node.name, int(node.reason_time or now), None,
                                     "DOWN" if node.down else "DRAIN", node.reason, node.reason_user or "root"))
        return sorted(out, key=lambda e: e.start)

    # -- the capability ---------------------------------------------------------------
    def _all_jobs(self, steps: bool) -> list[JobRecord]:
        """The made history, then what the simulated scheduler finished or runs."""
        live = []
        for sim_job in self.b._sim.jobs.values():  # noqa: SLF001
            if sim_job.start_time is None:
                continue
            j = sim_job
            gpus = j.gpus_per_node * j.node_count
            state = j.state if j.state != "COMPLETING" else "COMPLETED"
            elapsed = int((j.end_time or self.clock()) - j.start_time)
            live.append(JobRecord(
                job_id=str(j.job_id), job_id_raw=j.job_id, name=j.name, user=j.user, account=j.account,
                partition=j.partition, qos=j.qos, state=state, exit_code=j.exit_code, start_time=j.start_time,
                end_time=j.end_time, submit_time=j.submit_time, elapsed_s=elapsed, time_limit=j.time_limit,
                nodes=tuple(j.nodes), node_count=len(j.nodes) or j.node_count,
                alloc_tres={"cpu": float(j.cpus_per_node * j.node_count), "gres/gpu": float(gpus)},
                steps=(StepRecord("batch", elapsed_s=elapsed, tres_in_ave={"gres/gpuutil": 71.0}),) if gpus else ()))
        jobs = self._history + live
        return jobs if steps else [replace(j, steps=()) for j in jobs]

    async def jobs(self, q: JobQuery) -> Answer:
        now = self.clock()
        end = q.end or now
        keep = []
        for j in self._all_jobs(q.steps):
            if q.states and j.state not in q.states:
                continue
            if j.start_time is None or j.start_time > end or (j.end_time is not None and j.end_time < q.start):
                continue
            if q.states and "RUNNING" not in q.states and (j.end_time is None or j.end_time < q.start):
                continue
            if (q.users and j.user not in q.users) or (q.partitions and j.partition not in q.partitions) \
                    or (q.accounts and j.account not in q.accounts) or (q.nodes and q.nodes not in j.nodes):
                continue
            keep.append(j)
        return Answer(tuple(keep), _cost("sacct", len(keep)))

    async def step_usage(self, q: JobQuery) -> Answer:
        return await self.jobs(replace(q, steps=True))

    async def job(self, job_id: str) -> Answer:
        found = tuple(j for j in self._all_jobs(True) if j.job_id == job_id)
        return Answer(found, _cost(f"sacct -j {job_id}", len(found)))

    async def node_events(self, nodes: str, start: int, end: int | None = None) -> Answer:
        want = set(nodes.split(",")) if nodes else None
        found = tuple(e for e in self._events if (want is None or e.node in want) and (e.end is None or e.end >= start))
        return Answer(found, _cost("sacctmgr show event", len(found)))

    async def shares(self, users: tuple[str, ...] = ()) -> Answer:
        found = tuple(Share(a, u, 1.0, 0.2, 1e6, 0.2, 0.5) for u, a in _USERS if not users or u in users)
        return Answer(found, _cost("sshare", len(found)))

    async def limits(self, qos=(), users=(), accounts=()):
        from cockpit.backends._demo.sim import QOS_GPUS_PER_USER

        usage = self.b._sim._gpu_usage()  # noqa: SLF001 - the simulated scheduler's own count
        per_user = {u: (Limit("MaxTRESPU", "gres/gpu", float(QOS_GPUS_PER_USER), float(n)),) for u, n in usage.items()}
        for u in users:
            per_user.setdefault(u, (Limit("MaxTRESPU", "gres/gpu", float(QOS_GPUS_PER_USER), 0.0),))
        state = LimitsState(qos=(QosLimits("normal", per_user=per_user),) if not qos or "normal" in qos else ())
        return state, _cost("scontrol show assoc_mgr", len(state.qos))


class DemoScheduling:
    """sprio, reservations and one job's detail of the simulated scheduler."""

    priority_plugin = "priority/multifactor"

    def __init__(self, backend: Any) -> None:
        self.b = backend
        sc = backend._sc  # noqa: SLF001
        leaf = next(s for s in sc.topology.switches if s.nodes)
        now = int(sc.sim.time)
        self._res = (Reservation("maint-" + leaf.name, now + 3 * 3600, now + 7 * 3600, leaf.nodes,
                                 frozenset({"MAINT", "IGNORE_JOBS"}), ("root",), (), "", "INACTIVE",
                                 f"cpu={len(leaf.nodes) * 64}"),)

    async def priority(self, job_ids: tuple[int, ...] = (), partition: str = "") -> Answer:
        out = []
        for j in self.b._sim.jobs.values():  # noqa: SLF001
            if j.state != "PENDING" or j.held or (job_ids and j.job_id not in job_ids) or (partition and j.partition != partition):
                continue
            age = min(1000.0, (self.b.clock() - j.submit_time) / 600)
            rest = max(0.0, j.priority - age - 1000)
            out.append(PriorityFactors(j.job_id, j.user, j.partition, float(j.priority),
                                       {"age": round(age), "fairshare": round(rest * 0.8), "jobsize": round(rest * 0.2),
                                        "partition": 1000.0}))
        return Answer(tuple(out), _cost("sprio", len(out)))

    async def weights(self) -> dict[str, float]:
        return {"age": 1000.0, "fairshare": 100_000.0, "jobsize": 10_000.0, "partition": 1000.0}

    async def reservations(self) -> Answer:
        return Answer(self._res, _cost("scontrol show reservation", len(self._res)))

    async def job_detail(self, job_id: str) -> dict[str, str]:
        """``scontrol show job`` fields of a simulated job. Raises CommandFailed (Slurm's
        words) for an unknown one."""
        from cockpit.errors import CommandFailed

        j = self.b._sim.jobs.get(int(job_id.split("_")[0])) if job_id.split("_")[0].isdecimal() else None  # noqa: SLF001
        if j is None:
            raise CommandFailed(["scontrol", "show", "job", job_id], 1, "slurm_load_jobs error: Invalid job id specified")
        return job_fields(j)

    async def start_estimate(self, job_id: str):
        return None, "", _cost("squeue --start", 0)[0]


def slurm_duration(seconds: int) -> str:
    """``7-00:00:00`` / ``02:00:00``, as scontrol prints a time limit or a run time."""
    days, rest = divmod(max(int(seconds), 0), 86400)
    return (f"{days}-" if days else "") + f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"


def tres_mem(mb: int) -> str:
    """Memory as Slurm's TRES strings print it: in the next unit while that keeps it
    exact to a half (convert_num_unit2's CONVERT_NUM_UNIT_EXACT): 1600000 -> 1562.50G."""
    num, unit = float(mb), 0
    while num >= 1024 and int(num) % 512 == 0:
        num, unit = num / 1024, unit + 1
    return (f"{int(num)}" if num == int(num) else f"{num:.2f}") + "MGTP"[unit]


def job_fields(j: Any) -> dict[str, str]:
    """The ``scontrol show job`` fields of simulated job ``j`` that the demo's scheduler
    views read (why-pending) and its ``scontrol show job`` text prints."""
    gres = f"gres/gpu:h100:{j.gpus_per_node}" if j.gpus_per_node else ""
    cpus, gpus = j.cpus_per_node * j.node_count, j.gpus_per_node * j.node_count
    mem = tres_mem(j.mem_per_node * j.node_count)
    return {"JobState": j.state, "Reason": j.reason, "UserId": f"{j.user}(1000)", "Account": j.account,
            "QOS": j.qos, "Partition": j.partition, "TresPerNode": gres,
            # a job not yet placed asks for min-max nodes
            "NumNodes": str(j.node_count) if j.nodes else f"{j.node_count}-{j.node_count}",
            "ReqTRES": f"cpu={cpus},mem={mem},node={j.node_count},billing={cpus}" + (f",gres/gpu={gpus}" if gpus else ""),
            "TimeLimit": slurm_duration(j.time_limit * 60) if j.time_limit else "UNLIMITED",
            "Dependency": f"afterok:{j.depends_on}(unfulfilled)" if j.depends_on else "(null)",
            "ReqNodeList": ",".join(j.req_nodes) or "(null)", "ExcNodeList": ",".join(j.excluded) or "(null)"}


class DemoOffers:
    """The demo's accounting and scheduling capabilities (it has slurmdbd, simulated)."""

    accounting_why = ""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._accounting: DemoAccounting | None = None
        self._scheduling: DemoScheduling | None = None

    async def accounting(self) -> DemoAccounting:
        if self._accounting is None:
            self._accounting = DemoAccounting(self._backend)
        return self._accounting

    async def scheduling(self) -> DemoScheduling:
        if self._scheduling is None:
            self._scheduling = DemoScheduling(self._backend)
        return self._scheduling
