"""A job's stdout/stderr where the file is readable here: tail and follow.

Log lines are cluster data: control characters and terminal escape
sequences are removed before anything shows them (a job that prints
``\\x1b]52;...`` must not reach the operator's clipboard). A carriage return
keeps what a terminal would show: the text after the last one (progress bars).
Files that are not readable here (node-local disks, or a session on a login
node through ``--host``) are read over SSH on the node that writes them, the
job's batch host (its first node): :func:`open_job_output` chooses, and its
``source`` says where the lines come from (``node01:/path``).
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
    return last_lines(data, n, cut=pos > 0)


def last_lines(data: bytes, n: int, *, cut: bool = False) -> list[str]:
    """The last ``n`` lines of ``data``, sanitized; ``cut``: data starts mid-file,
    so its first line is probably partial and is dropped."""
    lines = data.decode("utf-8", "replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if cut and lines:
        lines = lines[1:]
    return [sanitize(line) for line in lines[-n:]] if n > 0 else []


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
    """Expand the sbatch filename patterns Slurm may leave in StdOut (sbatch(1)
    "filename pattern": %j %A %a %b %u %x %N %n %t %%, with an optional zero-padding
    width such as %4j; a path holding a backslash is taken as it is, minus the
    backslashes, as Slurm does)."""
    if "\\" in path:
        return path.replace("\\", "")
    if "%" not in path:
        return path
    task = job.array_task_id
    subs = {
        "j": str(job.job_id), "A": str(job.array_job_id or job.job_id),
        "a": str(task if task is not None else "4294967294"), "b": str(task % 10 if task is not None else 0),
        "u": job.user, "x": job.name, "N": job.nodes[0] if job.nodes else "%N", "n": "0", "t": "0", "%": "%",
    }
    return re.sub(r"%(\d*)([jAabuxNnts%])", lambda m: subs.get(m.group(2), m.group(0)).zfill(int(m.group(1) or 0)), path)


DEV_NULL = "/dev/null"


def default_output(job: Any) -> str:
    """Slurm's documented default for a batch job's stdout (and stderr): ``slurm-%j.out``,
    ``slurm-%A_%a.out`` for an array task, in the job's working directory."""
    name = "slurm-%A_%a.out" if job.array_job_id is not None and job.array_task_id is not None else "slurm-%j.out"
    return os.path.join(job.work_dir or "", expand_pattern(name, job))


def path_for(job: Any, *, stderr: bool = False) -> str:
    """The absolute path of a job's stdout (or stderr, which defaults to stdout).

    No path at all (what squeue --json says on Slurm 22.05 for ``sbatch`` without
    ``-o``) is Slurm's default, :func:`default_output`. "/dev/null" is taken as it
    is here (22.05 also reports it for a job without ``-o``: :func:`resolve_path`
    asks scontrol). Raises JobLogError when the job has no path and no working
    directory to find the default in."""
    raw = (job.stderr or job.stdout) if stderr else job.stdout
    if not raw:
        if not job.work_dir:
            raise JobLogError(f"job {job.job_id} has no {'stderr' if stderr else 'stdout'} path and no working "
                              "directory (interactive job? its output goes to the terminal that started it)")
        return default_output(job)
    path = expand_pattern(raw, job)
    if not os.path.isabs(path) and job.work_dir:
        path = os.path.join(job.work_dir, path)
    return path


def trusted_output(job: Any, values: Any) -> str | None:
    """Which of the values scontrol printed after ``StdOut=`` (or ``StdErr=``) to
    believe: a job name, comment or mail user may hold ``StdOut=/etc/shadow`` too,
    so only Slurm's default path for this job or "/dev/null" is taken; None when
    neither is among them."""
    values = tuple(values)
    default = default_output(job)
    if default in values:
        return default
    return DEV_NULL if DEV_NULL in values else None


async def resolve_path(job: Any, backend: Any = None, *, stderr: bool = False) -> str:
    """:func:`path_for`, with a "/dev/null" checked where the backend can ask
    ``scontrol show job`` (``job_output_paths``). Raises JobLogError for a job
    that writes nowhere or whose path cannot be trusted."""
    raw = (job.stderr or job.stdout) if stderr else job.stdout
    label = "stderr" if stderr else "stdout"
    if raw != DEV_NULL:
        return path_for(job, stderr=stderr)
    ask = backend.capabilities().output_paths if backend is not None else None
    if ask is None:
        raise JobLogError(f"job {job.job_id} writes its {label} to /dev/null: nothing to read")
    fields = await ask.job_output_paths(job.job_id)
    got = trusted_output(job, fields.get("StdErr" if stderr else "StdOut", ()))
    if got is None:
        raise JobLogError(f"job {job.job_id}: squeue says its {label} goes to /dev/null and scontrol names no "
                          f"path cockpit can trust (only {default_output(job)} or /dev/null are believed)")
    if got == DEV_NULL:
        raise JobLogError(f"job {job.job_id} writes its {label} to /dev/null: nothing to read")
    return got


async def find_job(backend: Any, job_id: str) -> Any:
    """The Job ``123`` or ``123_4`` from the backend.

    Raises JobLogError for an unknown job; the backend's own errors pass through."""
    jobs = await backend.fetch_jobs()
    for job in jobs:
        names = {str(job.job_id)}
        if job.array_job_id is not None and job.array_task_id is not None:
            names.add(f"{job.array_job_id}_{job.array_task_id}")
        if job_id in names:
            return job
    raise JobLogError(f"job {job_id} not found")


async def job_log_path(backend: Any, job_id: str, *, stderr: bool = False) -> str:
    """Find a job (``123`` or ``123_4``) in the backend and return its log path.

    Raises JobLogError for an unknown job; the backend's own errors pass through."""
    return path_for(await find_job(backend, job_id), stderr=stderr)


# -- when the output last changed (the TUI's output watch) -------------------

def stat_argv(paths: list[str]) -> list[str]:
    """``stat`` printing "MTIME PATH" per file (one command for all of a node's files)."""
    return ["stat", "-L", "-c", "%Y %n", "--", *paths]


def parse_mtimes(text: str, paths: Any) -> dict[str, float]:
    """{path: mtime} from :func:`stat_argv`'s output, for the ``paths`` asked only."""
    wanted = set(paths)
    out: dict[str, float] = {}
    for line in text.splitlines():
        stamp, _, path = line.partition(" ")
        if path in wanted and stamp.isdecimal():
            out[path] = float(stamp)
    return out


def local_mtimes(paths: Any) -> dict[str, float]:
    """{path: mtime} of the files readable here (the others are left out)."""
    out = {}
    for path in paths:
        try:
            out[path] = os.stat(path).st_mtime
        except OSError:
            continue
    return out


# -- wherever the file is: here or on the node that writes it ---------------

WHERE = ("auto", "local", "node")
REMOTE_FAILURES = 3  # consecutive SSH failures before a remote follow gives up


def readable_here(path: str) -> bool:
    """True when this process can open ``path`` (an access() check would lie for root)."""
    try:
        with open(path, "rb"):
            return True
    except OSError:
        return False


def reading_node(job: Any, path: str, *, where: str = "auto", remote_session: bool = False) -> str | None:
    """The node to read ``path`` on, or None for here.

    ``where``: "local" always here; "node" always on the batch host; "auto" on the
    batch host when the session is remote (``--host``) or the file is not
    readable here, and the job has started. Raises JobLogError when a node is
    required but the job has none yet (pending)."""
    if where not in WHERE:
        raise JobLogError(f"job output location must be one of {', '.join(WHERE)}, got {where!r}")
    if where == "local":
        return None
    batch_host = job.nodes[0] if job.nodes else None  # Slurm runs the batch script on the first node
    if where == "node" or remote_session:
        if batch_host is None:
            raise JobLogError(f"job {job.job_id} has no node yet ({job.state.lower()}): nothing writes its output")
        return batch_host
    if readable_here(path) or batch_host is None:
        return None
    return batch_host


class JobOutput:
    """A job's stdout or stderr, read here or over SSH; ``source`` says where."""

    def __init__(self, path: str, node: str | None = None, pool: Any = None, *, owns_pool: bool = False) -> None:
        self.path, self.node = path, node
        self._pool, self._owns_pool = pool, owns_pool
        self._remote = None
        self._rest = b""  # a partial last line left by tail(partial=False)
        if node is not None:
            from cockpit.remote.filetail import RemoteFile

            self._remote = RemoteFile(pool, node, path)

    @property
    def source(self) -> str:
        """``/path`` when read here, ``node01:/path`` when read on the node."""
        return self.path if self.node is None else f"{self.node}:{self.path}"

    async def tail(self, n: int = 20, *, partial: bool = True) -> list[str]:
        """The last ``n`` lines, sanitized. ``partial=False`` leaves out a last line
        still being written (a remote :meth:`follow` then yields it whole).
        Raises JobLogError naming the source."""
        if self._remote is None:
            return tail_lines(self.path, n)
        if n <= 0:
            return []
        want = min(MAX_TAIL_BYTES, max(_BLOCK, n * 256))
        while True:
            try:
                data, cut = await self._remote.last_bytes(want)
            except CockpitError as exc:
                raise JobLogError(str(exc) if self.source in str(exc) else f"{self.source}: {exc}") from None
            self._rest = b"" if partial else data[data.rfind(b"\n") + 1:]
            lines = last_lines(data[:len(data) - len(self._rest)], n, cut=cut)
            if len(lines) >= n or not cut or want >= MAX_TAIL_BYTES:
                return lines
            want = min(MAX_TAIL_BYTES, want * 4)

    async def follow(self, *, interval: float = 1.0, stop: Any = None) -> AsyncIterator[str]:
        """New complete lines as they are written (after :meth:`tail`: from where
        it ended, exactly). Waits while the file is missing; ``stop.is_set()``
        ends it. A remote follow raises JobLogError after REMOTE_FAILURES
        consecutive SSH failures."""
        if self._remote is None:
            async for line in follow(self.path, interval=interval, stop=stop):
                yield line
            return
        buf, failures = self._rest, 0
        while stop is None or not stop.is_set():
            try:
                chunk = await self._remote.poll()
            except CockpitError as exc:
                failures += 1
                if failures >= REMOTE_FAILURES:
                    raise JobLogError(f"{self.source}: {exc}") from None
                await asyncio.sleep(interval)
                continue
            failures = 0
            if chunk:
                *complete, buf = (buf + chunk).split(b"\n")
                for raw in complete:
                    yield sanitize(raw.decode("utf-8", "replace"))
                continue  # more may be waiting: read again before sleeping
            if chunk is None:  # missing: when it comes back, it is read from its start
                buf = b""
            await asyncio.sleep(interval)

    async def close(self) -> None:
        """Close the SSH pool when this object opened it."""
        if self._owns_pool and self._pool is not None:
            await self._pool.close()


def open_job_output(job: Any, *, stderr: bool = False, where: str = "auto", remote_session: bool = False,
                    settings: Any = None, pool: Any = None, path: str | None = None) -> JobOutput:
    """A JobOutput for the job's stdout (or stderr), here or on its batch host.

    ``pool`` (kept open: an SshPool, or the backend's probe runner, which the TUI
    passes so the demo's simulated nodes answer too) or ``settings`` (SshSettings:
    a pool of its own, closed by :meth:`JobOutput.close`) reach the nodes; nothing
    connects until the first read; ``path``: the file when already resolved
    (:func:`resolve_path`). Raises JobLogError (pending, no path, no node yet, bad ``where``)."""
    if job.state == "PENDING":
        raise JobLogError(f"job {job.job_id} is pending: no output yet")
    path = path if path is not None else path_for(job, stderr=stderr)
    node = reading_node(job, path, where=where, remote_session=remote_session)
    if node is None:
        return JobOutput(path)
    owns = pool is None
    if owns:
        from cockpit.remote.pool import SshPool
        from cockpit.remote.settings import SshSettings

        pool = SshPool(settings if settings is not None else SshSettings())
    return JobOutput(path, node, pool, owns_pool=owns)
