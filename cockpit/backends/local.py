"""The local Runner: a subprocess with an argv list, never a shell."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence

from cockpit.backends.base import CommandResult
from cockpit.errors import CommandNotFound, CommandTimeout


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
        from cockpit.core.parseproc import widen_pipe

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
