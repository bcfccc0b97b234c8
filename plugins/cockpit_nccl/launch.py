"""Submit a benchmark job, follow it through squeue, read its output.

Everything goes through the check's ``ctx.jobs`` (see cockpit.plugins.api):
the submission is an action of the gate (the script on ``sbatch --parsable``'s
stdin, shown and confirmed first, audited), the state comes from the backend,
the output file is read where Slurm's commands run, and the cleanup cancel of
a job this check submitted goes through the gate too. Nothing here assumes the
job's files are on this machine.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from cockpit.plugins.api import TERMINAL_STATES, CommandFailed, CommandTimeout, JobOutcome


async def cancel(jobs, job_id: int, why: str) -> None:
    """Cancel a job this check submitted (through the gate, audited); never raises."""
    await jobs.cancel(job_id, why)


async def follow(jobs, job_id: int, progress: Callable[[str], None], *, poll: float = 2.0,
                 timeout: float = 1800) -> str:
    """Poll the job's state until it ends; report each change through ``progress``.

    Returns the final state. On timeout the job is cancelled and CommandTimeout raised;
    on asyncio cancellation the job is cancelled too (a closed screen leaves nothing behind).
    """
    start, last = time.monotonic(), None
    try:
        while True:
            try:
                state, reason = await jobs.state(job_id)
            except (CommandFailed, CommandTimeout) as exc:
                # slurmctld restarting or busy must not abandon a long benchmark: keep
                # polling until the overall timeout.
                state, reason = last[0] if last else "PENDING", f"squeue failed: {exc}"
                if time.monotonic() - start > timeout:
                    raise
            now = (state, reason)
            if now != last:
                why = f" ({reason})" if reason and reason != "None" else ""
                progress(f"job {job_id}: {state.lower()}{why}")
                last = now
            if state in TERMINAL_STATES:
                return state
            if time.monotonic() - start > timeout:
                await cancel(jobs, job_id, f"still {state} after the check's {timeout:g} s limit")
                raise CommandTimeout(f"job {job_id} still {state} after {timeout:g} s: cancelled")
            await asyncio.sleep(poll)
    except asyncio.CancelledError:
        await cancel(jobs, job_id, "the check was stopped before the job ended")
        raise


async def read_output(jobs, path: str, tries: int = 5) -> str:
    """The job's output file; waits briefly because shared filesystems lag behind Slurm.

    Raises CommandFailed when it cannot be read after ``tries``."""
    for attempt in range(tries):
        try:
            return await jobs.read_output(path)
        except CommandFailed as exc:
            last = exc
            if attempt + 1 < tries:
                await asyncio.sleep(0.5 * (attempt + 1))
    raise last


async def run_job(jobs, script: str, output_template: str, progress: Callable[[str], None], *,
                  where: str, output_dir: str | None = None, poll: float = 2.0,
                  timeout: float = 1800) -> JobOutcome:
    """Submit (through the gate), follow and collect one job. ``output_template`` is
    the --output path (%j ok). Raises ConfirmationNeeded, ReadOnlyError, Declined,
    CommandFailed from the submission."""
    start = time.monotonic()
    job_id = await jobs.submit(script, where=where, output_dir=output_dir)
    progress(f"submitted job {job_id}")
    state = await follow(jobs, job_id, progress, poll=poll, timeout=timeout)
    path = output_template.replace("%j", str(job_id))
    try:
        text = await read_output(jobs, path, tries=5 if state == "COMPLETED" else 1)
    except CommandFailed as exc:
        # A job cancelled before it started writes nothing; the caller reports the state.
        progress(f"job {job_id}: no output ({exc})")
        text = ""
    return JobOutcome(job_id, state, text, path, time.monotonic() - start)
