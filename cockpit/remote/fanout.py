"""Fan-out: one command on many hosts over SSH, a bounded window at a time.

Each host costs at most its connect timeout plus its command timeout; a dead
or frozen host becomes an error result and never delays the others, because
every host runs in its own task and results are collected as they finish.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass

from cockpit.errors import CockpitError
from cockpit.remote.pool import SshPool

Progress = Callable[[int, int, "HostResult"], None]


@dataclass(frozen=True, slots=True)
class HostResult:
    """What one host answered; ``error`` is set when it could not run at all."""

    host: str
    returncode: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    duration: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0

    def to_json(self) -> dict:
        d = asdict(self)
        d["stdout"] = self.stdout.decode("utf-8", "replace")
        d["stderr"] = self.stderr.decode("utf-8", "replace")
        d["duration"] = round(self.duration, 3)
        return d


async def _one(pool: SshPool, host: str, argv: Sequence[str], timeout: float | None, keep: bool) -> HostResult:
    start = time.monotonic()
    try:
        res = await pool.run(host, argv, timeout=timeout)
        out = HostResult(host, res.returncode, res.stdout, res.stderr, time.monotonic() - start)
    except CockpitError as exc:
        out = HostResult(host, None, duration=time.monotonic() - start, error=str(exc))
    if not keep:
        await pool.discard(host)
    return out


async def fanout(
    pool: SshPool,
    hosts: Iterable[str],
    argv: Sequence[str],
    *,
    window: int | None = None,
    timeout: float | None = None,
    progress: Progress | None = None,
    keep_connections: bool = False,
) -> dict[str, HostResult]:
    """Run argv on every host; returns {host: HostResult} in the hosts' order.

    ``window`` bounds concurrent sessions (default: the pool's fanout_window).
    ``keep_connections`` leaves connections open for the next call (telemetry
    polls); one-off runs close each as soon as its host is done. Never raises
    for a single host's failure; raises ValueError for an empty argv.
    """
    if not argv:
        raise ValueError("fan-out needs a command")
    hosts = list(dict.fromkeys(hosts))
    sem = asyncio.Semaphore(max(1, window or pool.settings.fanout_window))
    results: dict[str, HostResult] = {}

    async def guarded(h: str) -> HostResult:
        async with sem:
            return await _one(pool, h, argv, timeout, keep_connections)

    tasks = [asyncio.ensure_future(guarded(h)) for h in hosts]
    try:
        for fut in asyncio.as_completed(tasks):
            res = await fut
            results[res.host] = res
            if progress is not None:
                progress(len(results), len(hosts), res)
    finally:
        for t in tasks:
            t.cancel()
    return {h: results[h] for h in hosts}
