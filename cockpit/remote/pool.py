"""A pool of SSH connections, one per host, opened on first use and reused.

Concurrent callers asking for the same host share one connection attempt.
A failed attempt is forgotten so the next call retries; a connection whose
command timed out is dropped, because a frozen peer would hang it again.
With a jump host configured, the jump connection is opened once and every
node connection is tunnelled through it (one login, many channels).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cockpit.runner import CommandResult
from cockpit.errors import BackendError, CommandTimeout
from cockpit.remote.knownhosts import KnownHostsCache
from cockpit.remote.settings import SshSettings, describe_error, host_key_refusal, remote_command

if TYPE_CHECKING:
    import asyncssh

# asyncssh is imported where a connection is opened, not with this module: with cryptography
# it is ~27,000 objects that every full collection walks (cockpit.core.poller.settle_heap's
# thaw), in a TUI that may never open a node (bench/bench_tui.py BENCH_BREAKDOWN=1).


class SshError(BackendError):
    """An SSH connection could not be made or broke; the message names the host."""


class SshPool:
    """Pooled asyncssh connections keyed by host (as written in ssh config)."""

    def __init__(self, settings: SshSettings) -> None:
        self.settings = settings
        self._conns: dict[str, asyncio.Task] = {}
        self._closed = False
        self.known_hosts = KnownHostsCache(settings)  # parsed once, not per connection

    async def connection(self, host: str) -> asyncssh.SSHClientConnection:
        """The open connection to ``host``; raises SshError with a one-line cause."""
        if self._closed:
            raise SshError(f"ssh {host}: connection pool is closed")
        task = self._conns.get(host)
        if task is not None and task.done():
            conn = None if task.cancelled() or task.exception() else task.result()
            if conn is None or conn.is_closed():
                self._conns.pop(host, None)
                task = None
        if task is None:
            task = asyncio.ensure_future(self._open(host))
            self._conns[host] = task
        try:
            return await asyncio.shield(task)
        except SshError:
            if self._conns.get(host) is task:
                self._conns.pop(host, None)
            raise

    async def _open(self, host: str) -> asyncssh.SSHClientConnection:
        import asyncssh

        s = self.settings
        tunnel = None
        if s.jump_host and host != s.jump_host:
            tunnel = await self.connection(s.jump_host)
        try:
            kw = s.connect_kwargs(host, tunnel)
            kw["known_hosts"] = self.known_hosts.for_host(host)
            # asyncssh applies connect_timeout itself; the outer wait_for also
            # bounds the time spent reading configs and keys.
            return await asyncio.wait_for(asyncssh.connect(host, **kw), (s.connect_timeout or 3600) + 1)
        except asyncssh.HostKeyNotVerifiable:
            # Never accepted, whatever the cause: the message tells a changed key from an
            # unknown one and gives the commands that accept the key offered now.
            raise SshError(host_key_refusal(s, host, self.known_hosts)) from None
        except (OSError, asyncssh.Error, asyncio.TimeoutError, ValueError) as exc:
            raise SshError(describe_error(s, host, exc)) from None

    async def discard(self, host: str) -> None:
        """Close and forget the connection to ``host`` (a later call reconnects)."""
        task = self._conns.pop(host, None)
        if task is None:
            return
        if not task.done():
            task.cancel()
            return
        if not task.cancelled() and task.exception() is None:
            task.result().abort()  # abort: close() would wait on a frozen peer

    async def run(
        self,
        host: str,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        stdin: bytes | None = None,
    ) -> CommandResult:
        """Run argv on host (every argument shlex-quoted). A non-zero exit
        (127 for a missing program) is returned; raises SshError (connection)
        or CommandTimeout."""
        import asyncssh

        argv = tuple(str(a) for a in argv)
        limit = self.settings.command_timeout if timeout is None else timeout
        start = time.monotonic()
        conn = await self.connection(host)
        cmd = remote_command(argv, self.settings.remote_path_prepend)
        try:
            io = {"input": stdin} if stdin is not None else {"stdin": asyncssh.DEVNULL}
            proc = await asyncio.wait_for(conn.run(cmd, encoding=None, check=False, **io), limit or None)
        except asyncio.TimeoutError:
            await self.discard(host)
            raise CommandTimeout(f"ssh {host}: {argv[0]} did not answer within {limit:g} s") from None
        except (OSError, asyncssh.Error) as exc:
            await self.discard(host)
            raise SshError(describe_error(self.settings, host, exc)) from None
        return _result(host, argv, proc, time.monotonic() - start)

    async def close(self) -> None:
        """Close every connection (jump host last, since the others ride on it)."""
        import asyncssh

        self._closed = True
        tasks = list(self._conns.items())
        self._conns.clear()
        jump = self.settings.jump_host
        for host, task in sorted(tasks, key=lambda t: t[0] == jump):
            if not task.done():
                task.cancel()
                continue
            if not task.cancelled() and task.exception() is None:
                conn = task.result()
                conn.close()
                try:
                    await asyncio.wait_for(conn.wait_closed(), 2)
                except (asyncio.TimeoutError, OSError, asyncssh.Error):
                    conn.abort()


def _result(host: str, argv: tuple[str, ...], proc, duration: float) -> CommandResult:
    out = proc.stdout or b""
    err = proc.stderr or b""
    if isinstance(out, str):
        out = out.encode()
    if isinstance(err, str):
        err = err.encode()
    code = proc.exit_status
    if code is None or code < 0:
        # killed by a signal on the far side (or the channel closed without a status)
        code = 128 + _signal_number(proc.exit_signal)
    return CommandResult(argv, code, out, err, duration)


def _signal_number(sig) -> int:
    import signal

    name = sig[0] if isinstance(sig, tuple) and sig else None
    try:
        return int(signal.Signals[f"SIG{name}"]) if name else 127
    except KeyError:
        return 127
