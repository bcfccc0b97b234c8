"""The Runner seam: one program given as an argv list, its result, and the local Runner.

Used alike by the backends (Slurm commands), by :mod:`cockpit.remote` (the SSH
Runner implements the same Protocol) and by the parse worker. Nothing above a
Runner may assume a local process.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from cockpit.errors import CommandNotFound, CommandTimeout

# The largest kernel pipe buffer asked for (the default is 64 KB).
PIPE_SIZE = 1 << 20


@dataclass(frozen=True, slots=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    def err_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")


@runtime_checkable
class Runner(Protocol):
    """Runs one program given as an argv list (never a shell string)."""

    description: str

    async def run(
        self, argv: Sequence[str], *, timeout: float | None = None, stdin: bytes | None = None
    ) -> CommandResult:
        """Run argv; raise CommandNotFound / CommandTimeout. A non-zero exit is
        returned, not raised: callers decide whether it is an error."""
        ...


def widen_pipe(transport: Any, size: int = PIPE_SIZE) -> None:
    """Grow a pipe's kernel buffer (64 KB by default) to ``size``: 100+ MB pass
    through the event loop per refresh, and each wake-up moves 16x more. Best effort."""
    try:
        import fcntl

        pipe = transport.get_extra_info("pipe")
        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, size)
    except (AttributeError, ImportError, OSError, ValueError):
        pass  # not Linux, or above /proc/sys/fs/pipe-max-size: the default works, slower


class LocalRunner:
    description = "local"

    def __init__(self, env: Mapping[str, str] | None = None, default_timeout: float = 30.0):
        self._env = dict(os.environ if env is None else env)
        self.default_timeout = default_timeout

    async def run(
        self, argv: Sequence[str], *, timeout: float | None = None, stdin: bytes | None = None
    ) -> CommandResult:
        argv = tuple(str(a) for a in argv)
        limit = self.default_timeout if timeout is None else timeout
        start = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env,
            )
        except FileNotFoundError:
            raise CommandNotFound(f"{argv[0]}: command not found on PATH") from None
        except PermissionError:
            raise CommandNotFound(f"{argv[0]}: not executable") from None
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), limit)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            raise CommandTimeout(f"{argv[0]} did not answer within {limit:g} s") from None
        return CommandResult(argv, proc.returncode or 0, out, err, time.monotonic() - start)

    def spawn_spec(self, argv: Sequence[str], timeout: float | None = None) -> tuple:
        """``(argv, env, timeout)`` for a helper process that runs argv itself as
        this Runner would (the parse worker: the output then never passes through
        the UI process)."""
        limit = self.default_timeout if timeout is None else timeout
        return tuple(str(a) for a in argv), dict(self._env), limit

    async def stream(
        self, argv: Sequence[str], *, timeout: float | None = None, chunk: int = 1 << 20
    ) -> AsyncIterator[bytes | CommandResult]:
        """Run argv and yield its stdout in chunks as it comes, then one CommandResult
        (with empty stdout) for the exit status and stderr.

        For outputs too big to hold twice (squeue --json of 100k jobs): the caller
        passes the chunks on instead of keeping them. Raises like :meth:`run`.
        """
        argv = tuple(str(a) for a in argv)
        limit = self.default_timeout if timeout is None else timeout
        start = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=self._env, limit=chunk,
            )
        except FileNotFoundError:
            raise CommandNotFound(f"{argv[0]}: command not found on PATH") from None
        except PermissionError:
            raise CommandNotFound(f"{argv[0]}: not executable") from None
        widen_pipe(proc._transport.get_pipe_transport(1))  # noqa: SLF001 - fewer wake-ups for 100+ MB
        err_task = asyncio.ensure_future(proc.stderr.read())
        try:
            while True:
                left = limit - (time.monotonic() - start)
                data = await asyncio.wait_for(proc.stdout.read(chunk), max(left, 0.001))
                if not data:
                    break
                yield data
            err = await asyncio.wait_for(err_task, max(limit - (time.monotonic() - start), 0.001))
            await asyncio.wait_for(proc.wait(), max(limit - (time.monotonic() - start), 0.001))
        except asyncio.TimeoutError:
            raise CommandTimeout(f"{argv[0]} did not answer within {limit:g} s") from None
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            err_task.cancel()
        yield CommandResult(argv, proc.returncode or 0, b"", err, time.monotonic() - start)
