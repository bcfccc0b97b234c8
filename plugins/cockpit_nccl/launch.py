"""Submit a benchmark job, follow it through squeue, read its output.

Everything goes through a Runner (local subprocess or SSH), never a shell: the
script is handed to ``sbatch --parsable`` on stdin and the output file is read
back with ``cat`` through the same Runner, so nothing here assumes the job's
files are on this machine.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from cockpit.errors import CommandFailed, CommandTimeout, ParseError

# Job states after which nothing more will be written.
TERMINAL = frozenset({
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
    "PREEMPTED", "BOOT_FAIL", "DEADLINE", "GONE",
})


@dataclass(frozen=True)
class JobOutcome:
    job_id: int
    state: str
    output: str
    output_path: str
    elapsed: float


async def submit(runner, script: str, timeout: float = 60) -> int:
    """Submit ``script`` with ``sbatch --parsable``; returns the job id.

    Raises CommandFailed (sbatch refused it) or ParseError (unexpected answer).
    """
    res = await runner.run(["sbatch", "--parsable"], stdin=script.encode(), timeout=timeout)
    if not res.ok:
        raise CommandFailed(res.argv, res.returncode, res.err_text())
    # --parsable prints "jobid" or "jobid;cluster".
    first = res.text().strip().split(";")[0]
    if not first.isdecimal():
        raise ParseError("sbatch --parsable", f"expected a job id, got {res.text().strip()[:60]!r}")
    return int(first)


async def job_state(runner, job_id: int) -> tuple[str, str]:
    """(state, reason) from squeue; ("GONE", "") once the job has left squeue."""
    res = await runner.run(["squeue", "-h", "-j", str(job_id), "--states=all", "-o", "%T|%r"],
                           timeout=30)
    text = res.text().strip()
    if not res.ok:
        if "Invalid job id" in res.err_text():
            return "GONE", ""
        raise CommandFailed(res.argv, res.returncode, res.err_text())
    if not text:
        return "GONE", ""
    state, _, reason = text.splitlines()[0].partition("|")
    return state.strip(), reason.strip()


async def cancel(runner, job_id: int) -> None:
    """scancel, ignoring a job that already ended."""
    try:
        await runner.run(["scancel", str(job_id)], timeout=30)
    except (CommandTimeout, OSError):
        pass


async def follow(runner, job_id: int, progress: Callable[[str], None], *, poll: float = 2.0,
                 timeout: float = 1800) -> str:
    """Poll squeue until the job ends; report each change through ``progress``.

    Returns the final state. On timeout the job is cancelled and CommandTimeout raised;
    on asyncio cancellation the job is cancelled too (a closed screen leaves nothing behind).
    """
    start, last = time.monotonic(), None
    try:
        while True:
            try:
                state, reason = await job_state(runner, job_id)
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
            if state in TERMINAL:
                return state
            if time.monotonic() - start > timeout:
                await cancel(runner, job_id)
                raise CommandTimeout(f"job {job_id} still {state} after {timeout:g} s: cancelled")
            await asyncio.sleep(poll)
    except asyncio.CancelledError:
        await cancel(runner, job_id)
        raise


async def read_output(runner, path: str, tries: int = 5) -> str:
    """The job's output file; waits briefly because shared filesystems lag behind Slurm."""
    for attempt in range(tries):
        res = await runner.run(["cat", path], timeout=60)
        if res.ok:
            return res.text()
        await asyncio.sleep(0.5 * (attempt + 1))
    raise CommandFailed(res.argv, res.returncode, res.err_text())


async def run_job(runner, script: str, output_template: str, progress: Callable[[str], None], *,
                  poll: float = 2.0, timeout: float = 1800) -> JobOutcome:
    """Submit, follow and collect one job. ``output_template`` is the --output path (%j ok)."""
    start = time.monotonic()
    job_id = await submit(runner, script)
    progress(f"submitted job {job_id}")
    state = await follow(runner, job_id, progress, poll=poll, timeout=timeout)
    path = output_template.replace("%j", str(job_id))
    try:
        text = await read_output(runner, path, tries=5 if state == "COMPLETED" else 1)
    except CommandFailed as exc:
        # A job cancelled before it started writes nothing; the caller reports the state.
        progress(f"job {job_id}: no output ({exc})")
        text = ""
    return JobOutcome(job_id, state, text, path, time.monotonic() - start)
