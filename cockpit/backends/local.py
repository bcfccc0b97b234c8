"""The local Runner: a subprocess with an argv list, never a shell."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping, Sequence

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
