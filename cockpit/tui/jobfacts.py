"""One cluster's facts about its jobs beyond their records (issue 22): what a job's
detail shows besides Slurm's fields.

Each :class:`~cockpit.tui.fleet.ClusterLink` has one :class:`ClusterFacts`, read
from that cluster's own snapshot, change tracker (``:job ID`` tells "left the
queue" from "never existed"), output watch mtimes, GPU telemetry and the runbooks
run on it: never from the Pulse of the cluster in front, so a detail opened for
cluster A shows A's facts after a switch to B, even where B has the same job id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cockpit.tui.suspects import find_suspects


class ClusterFacts:
    """Implements JobFacts (cockpit/tui/services.py) for one cluster's link."""

    def __init__(self, link: Any, clock: Callable[[], float]) -> None:
        """``link``: its ClusterLink (snapshot, tracker, outputs, telemetry, config), read on each ask."""
        self.link, self.clock = link, clock
        self.hints: dict[int, dict[str, Any]] = {}  # job id -> what a runbook found (the straggler's node)

    def job_fate(self, job_id: Any) -> str:
        """Why a job id is not in this cluster's queue ("left the queue 3m ago", "never seen")."""
        try:
            return self.link.tracker.job_fate(int(job_id), self.clock())
        except (TypeError, ValueError):
            return "not in the queue"

    def hints_for(self, job_id: int) -> dict[str, Any]:
        """What a runbook run on this cluster found about the job (the straggler's node and rank)."""
        return self.hints.get(job_id, {})

    def remember(self, job_id: int, facts: dict[str, Any]) -> None:
        """Keep what a runbook found (``straggler_node``, ``straggler_rank``) for the job's detail."""
        self.hints[job_id] = {k: facts[k] for k in ("straggler_node", "straggler_rank") if k in facts}

    def output_mtime(self, job_id: int) -> float | None:
        """When the job's output last changed, as this cluster's output watch read it."""
        return self.link.outputs.get(job_id)

    def suspect_evidence(self, job_id: int) -> tuple[str, ...]:
        """Why the Pulse's rules suspect the running job, from this cluster's readings;
        nothing once it is not running (a requeued job, pending again, has no evidence)."""
        link = self.link
        snap = link.snapshot
        job = snap.job(job_id) if snap is not None else None
        if job is None or job.state != "RUNNING":
            return ()
        found = find_suspects((job,), self.clock(), last_output=link.outputs, telemetry=link.telemetry,
                              usual=link.tracker.usual, silent_after=link.config.tui.silent_after)
        return ("; ".join(found[0].evidence),) if found else ()
