"""What a reservation (a maintenance window included) will block: the running
jobs on its nodes whose time limit runs past its start, and the pending jobs
that could use its nodes and whose time limit, started now, would cross it.
Pure: from the reservation and a snapshot. No Textual."""

from __future__ import annotations

from dataclasses import dataclass

from cockpit.models import ClusterSnapshot, Job
from cockpit.models.accounting import Reservation


@dataclass(frozen=True, slots=True)
class Impact:
    reservation: Reservation
    running_past_start: tuple[Job, ...]  # on its nodes, limit ends after it starts
    pending_crossing: tuple[Job, ...]  # could run on its nodes, time limit crosses it
    gpus: int  # GPUs of its nodes

    @property
    def text(self) -> str:
        r = self.reservation
        return (f"{len(self.running_past_start)} running job(s) on its nodes would still run at its start; "
                f"{len(self.pending_crossing)} pending job(s) that may use its nodes cross it; {self.gpus} GPU(s)")


def _end_by_limit(job: Job) -> float:
    if job.time_limit is None or job.start_time is None:
        return float("inf")
    return job.start_time + job.time_limit * 60


def impact(res: Reservation, snap: ClusterSnapshot, now: float) -> Impact:
    nodes = set(res.nodes)
    start = res.start if res.start is not None else now
    part_nodes = {p.name: set(p.nodes) for p in snap.partitions}
    running, pending = [], []
    for j in snap.jobs:
        if j.state == "RUNNING" and nodes.intersection(j.nodes) and _end_by_limit(j) > start:
            running.append(j)
        elif j.state == "PENDING":
            could = set().union(*(part_nodes.get(p, set()) for p in j.partition.split(",") if p))
            crosses = j.time_limit is None or now + j.time_limit * 60 > start
            if crosses and could & nodes and (res.end is None or res.end > now):
                pending.append(j)
    gpus = sum(n.gpu_total for n in snap.nodes if n.name in nodes)
    return Impact(res, tuple(running), tuple(pending), gpus)
