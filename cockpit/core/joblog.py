"""A job's stdout/stderr where the file is readable here: tail and follow.

Log lines are cluster data: control characters and terminal escape
sequences are removed before anything shows them (a job that prints
``\\x1b]52;...`` must not reach the operator's clipboard). A carriage return
keeps what a terminal would show: the text after the last one (progress bars).
The SSH issue extends this to files that live on compute nodes.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator
from typing import Any

from cockpit.core.text import sanitize as _clean_line
from cockpit.errors import CockpitError

_BLOCK = 64 * 1024
MAX_TAIL_BYTES = 8 * 1024 * 1024  # a tail never reads more than this from the end


class JobLogError(CockpitError):
    """A job's output file is unknown or cannot be read here."""


def sanitize(text: str) -> str:
    """Each line made safe by cockpit.core.text.sanitize; newlines stay, \\r keeps the last part."""
    rows = text.split("\n")
    return "\n".join(_clean_line(r.rstrip("\r").rsplit("\r", 1)[-1]) for r in rows)


def tail_lines(path: str, n: int = 20) -> list[str]:
    """The last ``n`` lines of ``path``, sanitized. Raises JobLogError naming the file."""
    if n <= 0:
        return []
    try:
        with open(path, "rb") as fh:
            end = fh.seek(0, os.SEEK_END)
            pos, data = end, b""
            while pos > 0 and data.count(b"\n") <= n and end - pos < MAX_TAIL_BYTES:
                step = min(_BLOCK, pos)
                pos -= step
                fh.seek(pos)
                data = fh.read(step) + data
    except OSError as exc:
        raise JobLogError(f"cannot read {path}: {exc.strerror or exc}") from None
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if pos > 0 and lines:
        lines = lines[1:]  # the first line read is probably cut
    return [sanitize(line) for line in lines[-n:]]


async def follow(path: str, *, interval: float = 1.0, from_end: bool = True,
                 stop: asyncio.Event | None = None) -> AsyncIterator[str]:
    """Yield complete new lines appended to ``path``, polling every ``interval`` s.

    Survives the file appearing late, being truncated (starts again at 0) and
    being replaced (new inode: reads the new file from its start). Stops when
    ``stop`` is set. Never raises for a missing file: it waits."""
    pos, inode, buf = None, None, b""
    while stop is None or not stop.is_set():
        try:
            st = os.stat(path)
        except OSError:
            await asyncio.sleep(interval)
            continue
        if inode != st.st_ino or pos is None:
            pos = st.st_size if (from_end and inode is None) else 0
            inode, buf = st.st_ino, b""
        elif st.st_size < pos:
            pos, buf = 0, b""
        if st.st_size > pos:
            try:
                with open(path, "rb") as fh:
                    fh.seek(pos)
                    chunk = fh.read(MAX_TAIL_BYTES)
            except OSError:
                chunk = b""
            pos += len(chunk)
            buf += chunk
            *complete, buf = buf.split(b"\n")
            for raw in complete:
                yield sanitize(raw.decode("utf-8", "replace"))
            continue  # more may be waiting: read again before sleeping
        await asyncio.sleep(interval)


def expand_pattern(path: str, job: Any) -> str:
    """Expand the sbatch filename patterns Slurm may leave in StdOut (%j %A %a %u %x %%)."""
    if "%" not in path:
        return path
    subs = {
        "j": str(job.job_id), "A": str(job.array_job_id or job.job_id),
        "a": str(job.array_task_id if job.array_task_id is not None else "4294967294"),
        "u": job.user, "x": job.name, "%": "%",
    }
    return re.sub(r"%(\d*)([jAauxs%])", lambda m: subs.get(m.group(2), m.group(0)).zfill(int(m.group(1) or 0)), path)


def path_for(job: Any, *, stderr: bool = False) -> str:
    """The absolute path of a job's stdout (or stderr, which defaults to stdout).

    Raises JobLogError when the job has no such path."""
    raw = (job.stderr or job.stdout) if stderr else job.stdout
    if not raw:
        raise JobLogError(f"job {job.job_id} has no {'stderr' if stderr else 'stdout'} path (interactive job?)")
    path = expand_pattern(raw, job)
    if not os.path.isabs(path) and job.work_dir:
        path = os.path.join(job.work_dir, path)
    return path


async def job_log_path(backend: Any, job_id: str, *, stderr: bool = False) -> str:
    """Find a job (``123`` or ``123_4``) in the backend and return its log path.

    Raises JobLogError for an unknown job; the backend's own errors pass through."""
    jobs = await backend.fetch_jobs()
    for job in jobs:
        names = {str(job.job_id)}
        if job.array_job_id is not None and job.array_task_id is not None:
            names.add(f"{job.array_job_id}_{job.array_task_id}")
        if job_id in names:
            return path_for(job, stderr=stderr)
    raise JobLogError(f"job {job_id} not found")
