"""The demo cluster's admin actions: what scancel, scontrol and sbatch do to it.

Each method changes the simulated state the way Slurm would, and fails with
Slurm's own words (CommandFailed) where Slurm refuses. Mixed into DemoBackend,
whose executor (_demo/executor.py) calls them for the gate's steps.
"""

from __future__ import annotations

from cockpit.backends._demo.state import FINISHED_STATES, PENDING, RUNNING, SimJob, SimNode
from cockpit.backends.slurm_text import duration_minutes
from cockpit.errors import CommandFailed, ParseError
from cockpit.hostlist import expand


class DemoAdmin:
    """scancel / scontrol / sbatch on the simulated cluster (needs ``_sim``, ``_now``,
    ``_batch`` and ``operator`` from DemoBackend)."""

    # -- actions -------------------------------------------------------------
    async def cancel_job(self, job_id: int | str) -> None:
        """``scancel``: the job (and its array tasks / het components) ends CANCELLED.
        Raises CommandFailed for an unknown or finished job."""
        argv = ["scancel", str(job_id)]
        now = self._now()
        job = self._job(argv, job_id, "scancel: error: Kill job error on job id {}: ")
        if job.state in FINISHED_STATES:
            raise CommandFailed(argv, 1, f"scancel: error: Kill job error on job id {job_id}: "
                                         "Job/step already completing or completed")
        for target in self._family(job):
            if target.state in (PENDING, RUNNING):
                self._sim.finish(target, "CANCELLED", now, exit_code=0)
        self._sim.schedule(now)

    async def hold_job(self, job_id: int | str) -> None:
        """``scontrol hold``. Raises CommandFailed unless the job is pending."""
        argv = ["scontrol", "hold", str(job_id)]
        self._now()
        job = self._job(argv, job_id, "scontrol: error: ")
        if job.state != PENDING:
            raise CommandFailed(argv, 1, f"scontrol: error: Job is no longer pending execution for job {job_id}")
        job.held, job.reason = "admin", "JobHeldAdmin"

    async def release_job(self, job_id: int | str) -> None:
        """``scontrol release``. Raises CommandFailed unless the job is pending."""
        argv = ["scontrol", "release", str(job_id)]
        now = self._now()
        job = self._job(argv, job_id, "scontrol: error: ")
        if job.state != PENDING:
            raise CommandFailed(argv, 1, f"scontrol: error: Job is no longer pending execution for job {job_id}")
        job.held, job.reason = None, "None"
        self._sim.schedule(now)

    async def requeue_job(self, job_id: int | str) -> None:
        """``scontrol requeue``: a running or finished job goes back to the queue.
        Raises CommandFailed for an unknown or pending job."""
        argv = ["scontrol", "requeue", str(job_id)]
        now = self._now()
        job = self._job(argv, job_id, "scontrol: error: ")
        if job.state == PENDING:
            raise CommandFailed(argv, 1, f"scontrol: error: Job is pending execution for job {job_id}")
        for target in self._family(job):
            if target.state != PENDING:
                self._sim.requeue(target, now)
        self._sim.schedule(now)

    async def drain_node(self, name: str, reason: str) -> None:
        """``scontrol update NodeName=.. State=DRAIN Reason=..``. Running jobs go on;
        nothing new starts there. Raises CommandFailed for an unknown node or no reason."""
        argv = ["scontrol", "update", f"NodeName={name}", "State=DRAIN", f"Reason={reason}"]
        now = self._now()
        node = self._node(argv, name)
        if not reason or not reason.strip():
            raise CommandFailed(argv, 1, "You must specify a reason when DOWNING or DRAINING a node. Request denied")
        node.drain, node.reason, node.reason_user, node.reason_time = True, reason, self.operator, now

    async def resume_node(self, name: str) -> None:
        """``scontrol update NodeName=.. State=RESUME``. Raises CommandFailed for an
        unknown node or one that is neither drained nor down."""
        argv = ["scontrol", "update", f"NodeName={name}", "State=RESUME"]
        now = self._now()
        node = self._node(argv, name)
        if not (node.drain or node.down):
            raise CommandFailed(argv, 1, "slurm_update error: Invalid node state specified")
        node.drain = node.down = node.not_responding = False
        node.reason = node.reason_user = node.reason_time = None
        self._sim.schedule(now)

    async def submit_batch(self, script: str) -> int:
        """``sbatch --parsable`` with ``script`` on stdin: a simulated job; its id.
        Raises CommandFailed with sbatch's words for a bad script, node or partition."""
        return self._batch.submit(script, self._now())

    async def set_excluded_nodes(self, job_id: int | str, nodes: str) -> None:
        """``scontrol update JobId=.. ExcNodeList=..`` (replaces the list). Raises
        CommandFailed unless the job is pending, or for an unknown node."""
        argv = ["scontrol", "update", f"JobId={job_id}", f"ExcNodeList={nodes}"]
        self._now()
        job = self._job(argv, job_id, "scontrol: error: ")
        if job.state != PENDING:
            raise CommandFailed(argv, 1, f"scontrol: error: Job is no longer pending execution for job {job_id}")
        try:
            names = expand(nodes)
        except ParseError:
            names = ("?",)
        if any(n not in self._sim.nodes for n in names):
            raise CommandFailed(argv, 1, "scontrol: error: Invalid node name specified")
        job.excluded = tuple(names)

    async def reboot_node(self, name: str, reason: str, nextstate: str = "resume") -> None:
        """``scontrol reboot ASAP nextstate=.. reason=.. NODE``: drained now, rebooted
        once idle (REBOOT_S later), then resumed or left down. Raises CommandFailed
        for an unknown node, no reason or a bad nextstate."""
        argv = ["scontrol", "reboot", "ASAP", f"nextstate={nextstate}", f"reason={reason}", name]
        now = self._now()
        node = self._node(argv, name)
        if nextstate not in ("resume", "down"):
            raise CommandFailed(argv, 1, f"scontrol: error: Invalid nextstate value: {nextstate}")
        if not reason or not reason.strip():
            raise CommandFailed(argv, 1, "scontrol: error: reason required")
        node.drain, node.reason, node.reason_user, node.reason_time = True, reason, self.operator, now
        node.reboot = (nextstate, now)

    async def requeue_hold_job(self, job_id: int | str) -> None:
        """``scontrol requeuehold``: requeue, then hold. Raises CommandFailed as requeue_job."""
        await self.requeue_job(job_id)
        for target in self._family(self._job(["scontrol", "requeuehold", str(job_id)], job_id, "")):
            target.held, target.reason = "admin", "JobHeldAdmin"

    async def signal_job(self, job_id: int | str, signal: str = "TERM") -> None:
        """``scancel --signal``: simulated processes ignore it. Raises CommandFailed
        for an unknown or finished job."""
        argv = ["scancel", f"--signal={signal}", str(job_id)]
        self._now()
        job = self._job(argv, job_id, "scancel: error: Kill job error on job id {}: ")
        if job.state in FINISHED_STATES:
            raise CommandFailed(argv, 1, f"scancel: error: Kill job error on job id {job_id}: "
                                         "Job/step already completing or completed")

    async def undrain_node(self, name: str) -> None:
        """``State=UNDRAIN``: clear the drain flag only. Raises CommandFailed for an
        unknown node or one that is not drained."""
        argv = ["scontrol", "update", f"NodeName={name}", "State=UNDRAIN"]
        now = self._now()
        node = self._node(argv, name)
        if not node.drain:
            raise CommandFailed(argv, 1, "slurm_update error: Invalid node state specified")
        node.drain = False
        if not node.down:
            node.reason = node.reason_user = node.reason_time = None
        self._sim.schedule(now)

    async def set_node_down(self, name: str, reason: str) -> None:
        """``State=DOWN Reason=..``: jobs on the node end NODE_FAIL, as in Slurm.
        Raises CommandFailed for an unknown node or no reason."""
        argv = ["scontrol", "update", f"NodeName={name}", "State=DOWN", f"Reason={reason}"]
        now = self._now()
        node = self._node(argv, name)
        if not reason or not reason.strip():
            raise CommandFailed(argv, 1, "You must specify a reason when DOWNING or DRAINING a node. Request denied")
        for job_id in {j for j in node.owners if j is not None}:
            job = self._sim.jobs.get(job_id)
            if job is not None and job.state == RUNNING:
                self._sim.finish(job, "NODE_FAIL", now, exit_code=1)
        node.down, node.reason, node.reason_user, node.reason_time = True, reason, self.operator, now
        self._sim.schedule(now)

    async def set_time_limit(self, job_id: int | str, time_limit: str) -> None:
        """``scontrol update JobId=.. TimeLimit=..`` (Slurm's time syntax).
        Raises CommandFailed for an unknown or finished job or a bad limit."""
        argv = ["scontrol", "update", f"JobId={job_id}", f"TimeLimit={time_limit}"]
        self._now()
        job = self._job(argv, job_id, "scontrol: error: ")
        if job.state in FINISHED_STATES:
            raise CommandFailed(argv, 1, f"scontrol: error: Job has already finished for job {job_id}")
        try:
            minutes = duration_minutes(str(time_limit))
        except ParseError:
            raise CommandFailed(argv, 1, f"scontrol: error: Invalid TimeLimit value: {time_limit}") from None
        job.time_limit = minutes if minutes is not None else 0

    async def top_job(self, job_id: int | str) -> None:
        """``scontrol top``: first among its user's pending jobs. Raises CommandFailed
        unless the job is pending."""
        argv = ["scontrol", "top", str(job_id)]
        self._now()
        job = self._job(argv, job_id, "scontrol: error: ")
        if job.state != PENDING:
            raise CommandFailed(argv, 1, f"scontrol: error: Job is no longer pending execution for job {job_id}")
        mine = [j.priority for j in self._sim.jobs.values() if j.user == job.user and j.state == PENDING]
        job.priority = max(mine) + 1

    async def nice_job(self, job_id: int | str, nice: int) -> None:
        """``scontrol update JobId=.. Nice=N``: lower the priority by N. Raises
        CommandFailed unless the job is pending."""
        argv = ["scontrol", "update", f"JobId={job_id}", f"Nice={nice}"]
        self._now()
        job = self._job(argv, job_id, "scontrol: error: ")
        if job.state != PENDING:
            raise CommandFailed(argv, 1, f"scontrol: error: Job is no longer pending execution for job {job_id}")
        job.priority = max(0, job.priority - int(nice))

    # -- lookups -------------------------------------------------------------
    def _job(self, argv: list[str], job_id: int | str, prefix: str) -> SimJob:
        """The job for ``123`` or an array task ``123_4``; CommandFailed if unknown."""
        text = str(job_id).strip()
        head, _, task = text.partition("_")
        job = None
        if head.isdecimal() and not task:
            job = self._sim.jobs.get(int(head))
        elif head.isdecimal() and task.isdecimal():
            job = next((j for j in self._sim.jobs.values()
                        if j.array_job_id == int(head) and j.array_task_id == int(task)), None)
        if job is None:
            raise CommandFailed(argv, 1, prefix.format(text) + "Invalid job id specified")
        return job

    def _family(self, job: SimJob) -> list[SimJob]:
        """What Slurm acts on for this id: a whole array for the array's id, every
        component for a het leader, else the job alone."""
        if job.array_job_id == job.job_id or (job.het_job_id == job.job_id and job.het_offset == 0):
            key = "array_job_id" if job.array_job_id == job.job_id else "het_job_id"
            return [j for j in self._sim.jobs.values() if getattr(j, key) == job.job_id]
        return [job]

    def _node(self, argv: list[str], name: str) -> SimNode:
        node = self._sim.nodes.get(name)
        if node is None:
            raise CommandFailed(argv, 1, "slurm_update error: Invalid node name specified")
        return node
