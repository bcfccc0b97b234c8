"""The pyslurm worker: a process of its own that makes every pyslurm call.

pyslurm's calls hold the GIL for as long as libslurm works (the RPC, unpacking
the answer), and a Python thread of the UI process cannot be interrupted while
they do: a slow or hung slurmctld would freeze the keys for the whole message
timeout. Here the UI process only waits on a pipe. The worker keeps a
:class:`~cockpit.backends.pyslurm_source.Source` (the loaded generation adapter,
what it sent last) and answers one request at a time.

``python -m cockpit.backends.pyslurm_worker``, started with asyncio's subprocess
support (a fresh interpreter, nothing inherited but the environment). If the
parent dies the worker reads EOF and exits.

Wire format, both ways: frames of an 8-byte little-endian length and a pickled
payload (:func:`cockpit.backends.slurm_delta.dumps`). Request: ``(op, *args)``
with op ``info``, ``version``, ``jobs``/``nodes`` (arg: reset), ``partitions``,
``job_state`` (job id), ``act`` (action, target, params). Answer: ``("delta",
Delta)`` frames until one has ``done`` (jobs, nodes), or ``("ok", value)``, or
one final ``("fail", cause, message)`` (a PyslurmFailure), ``("parse", source,
detail)`` (a ParseError) or ``("crash", text)``.
"""

from __future__ import annotations

import asyncio
import os
import pickle
from collections.abc import AsyncIterator
from typing import Any, BinaryIO

from cockpit.backends._workerproc import WorkerProcess, read_frame, receive, serve_stdio, write_frame
from cockpit.errors import CockpitError, ParseError

STREAMS = ("jobs", "nodes")
OPS = ("info", "version", "jobs", "nodes", "partitions", "job_state", "act")


class WorkerFailed(CockpitError):
    """The pyslurm worker could not be started, died, or broke the protocol."""


class Failed(CockpitError):
    """A pyslurm call failed in the worker; ``cause`` as in PyslurmFailure."""

    def __init__(self, cause: str, message: str) -> None:
        super().__init__(message)
        self.cause = cause


# -- worker side ------------------------------------------------------------------
def _write(out: BinaryIO, msg: tuple) -> None:
    from cockpit.backends.slurm_delta import dumps

    write_frame(out, dumps(msg))


def answer(source: Any, request: tuple, out: BinaryIO) -> None:
    """Answer one request on ``out``; never raises for pyslurm's failures."""
    from cockpit.backends.pyslurm_compat import PyslurmFailure

    op, args = request[0], request[1:]
    try:
        if op not in OPS:
            raise ValueError(f"unknown request {op!r}")
        if op in STREAMS:
            for delta in getattr(source, op)(*args):
                _write(out, ("delta", delta))
            return
        _write(out, ("ok", getattr(source, op)(*args)))
    except PyslurmFailure as f:
        _write(out, ("fail", f.cause, f.message))
    except ParseError as exc:
        _write(out, ("parse", exc.source, exc.detail))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which says so
        _write(out, ("crash", f"{type(exc).__name__}: {exc}"))


def serve(inp: BinaryIO, out: BinaryIO) -> None:
    """Answer requests until EOF."""
    from cockpit.backends.pyslurm_source import Source

    source = Source()
    while True:
        frame = read_frame(inp)
        if frame is None:
            return
        answer(source, pickle.loads(frame), out)
        out.flush()


# -- parent side ------------------------------------------------------------------
def _raise_for(msg: tuple) -> None:
    if msg[0] == "fail":
        raise Failed(msg[1], msg[2])
    if msg[0] == "parse":
        raise ParseError(msg[1], msg[2])
    raise WorkerFailed(f"pyslurm worker failed: {msg[1] if len(msg) > 1 else msg[0]}")


class PyslurmWorker(WorkerProcess):
    """One worker process; requests are answered one at a time, in order.

    ``env``: extra environment for the worker (on top of this process's).
    Raises WorkerFailed when the process cannot be used, Failed for a pyslurm
    call that failed in it, ParseError for data it could not map."""

    module = "cockpit.backends.pyslurm_worker"
    name = "pyslurm worker"
    failure = WorkerFailed

    def __init__(self, env: dict[str, str] | None = None, python: str | None = None) -> None:
        super().__init__(python)
        self.env = dict(env or {})
        self.starts = 0  # processes started (a restart after a crash counts)

    async def _ensure(self) -> asyncio.subprocess.Process:
        self._follow_loop()
        if self.running:
            return self._proc  # type: ignore[return-value]
        proc = await self._start(dict(os.environ, **self.env))
        self.starts += 1
        return proc

    async def _send(self, request: tuple) -> asyncio.subprocess.Process:
        proc = await self._ensure()
        write_frame(proc.stdin, pickle.dumps(request))
        await proc.stdin.drain()  # type: ignore[union-attr]
        return proc

    async def call(self, op: str, *args: Any) -> Any:
        """One request answered by one value."""
        async for msg in self._exchange((op, *args)):
            return msg

    async def deltas(self, op: str, reset: bool) -> AsyncIterator[Any]:
        """The Deltas of a jobs/nodes request, until the one marked ``done``."""
        async for delta in self._exchange((op, reset)):
            yield delta

    async def _why_stopped(self, exc: BaseException) -> str:
        """What the worker said before it died (its stderr's last line and exit
        status) when it did die; else the broken pipe's own error."""
        proc = self._proc
        if proc is not None and isinstance(exc, (asyncio.IncompleteReadError, EOFError, OSError)):
            try:
                await asyncio.wait_for(proc.wait(), 1.0)  # its stdout ended: the exit follows at once
            except asyncio.TimeoutError:
                pass
            words = self.last_words(proc)
            if words:
                return words
        return f"{type(exc).__name__}: {exc}"

    async def _exchange(self, request: tuple) -> AsyncIterator[Any]:
        await self._ensure()
        assert self._lock is not None
        async with self._lock:
            finished = False
            try:
                proc = await self._send(request)
                while True:
                    msg = await receive(proc)
                    if msg[0] == "delta":
                        finished = msg[1].done
                        yield msg[1]
                        if finished:
                            return
                    elif msg[0] == "ok":
                        finished = True
                        yield msg[1]
                        return
                    else:
                        finished = msg[0] in ("fail", "parse")
                        _raise_for(msg)
            except (OSError, EOFError, asyncio.IncompleteReadError, pickle.UnpicklingError,
                    IndexError, TypeError, AttributeError) as exc:
                raise WorkerFailed(f"pyslurm worker stopped: {await self._why_stopped(exc)}") from None
            finally:
                if not finished:
                    self.kill()  # its state is unknown now: the next request starts a new one


class ThreadWorker:
    """The same requests answered by a Source in a thread of this process (used
    when the worker process cannot run; pyslurm then holds this process's GIL)."""

    def __init__(self, source: Any = None) -> None:
        if source is None:
            from cockpit.backends.pyslurm_source import Source

            source = Source()
        self.source = source
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _guard(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._lock = loop, asyncio.Lock()
        assert self._lock is not None
        return self._lock

    async def _run(self, op: str, *args: Any) -> Any:
        from cockpit.backends.pyslurm_compat import PyslurmFailure

        if op not in OPS:
            raise WorkerFailed(f"unknown request {op!r}")
        fn = getattr(self.source, op)
        if op in STREAMS:
            fn = lambda *a, f=fn: list(f(*a))  # noqa: E731 - the generator runs in the thread too
        async with self._guard():
            try:
                return await asyncio.to_thread(fn, *args)
            except PyslurmFailure as f:
                raise Failed(f.cause, f.message) from None

    async def call(self, op: str, *args: Any) -> Any:
        return await self._run(op, *args)

    async def deltas(self, op: str, reset: bool) -> AsyncIterator[Any]:
        for delta in await self._run(op, reset):
            yield delta

    def kill(self) -> None:
        pass

    async def close(self) -> None:
        pass


def main() -> None:
    serve_stdio(serve)


if __name__ == "__main__":
    main()
