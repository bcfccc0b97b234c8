"""A long-lived worker process that parses big Slurm outputs and returns deltas.

Parsing 100k jobs costs seconds of CPU; in a thread of the UI process it holds
the GIL and keys wait. The CLI backend still runs its commands through its
Runner (local or SSH) in the UI process, then streams the raw bytes here; the
worker parses them with :mod:`cockpit.backends.slurm_delta`, keeps the previous
result, and answers with Deltas (only ~1% of the objects per refresh), first
load in chunks so the first screen does not wait for the last job.

The worker is ``python -m cockpit.core.parseproc`` started with asyncio's
subprocess support: a fresh interpreter (exec, like multiprocessing's "spawn"),
so nothing of the parent's threads or event loop is inherited, the parent's
``__main__`` (the ``cockpit`` script, a bench) is not re-imported as
multiprocessing would, and the pipes are read on the event loop, without helper
threads. If the parent dies the worker reads EOF and exits.

Wire format, both ways: frames of an 8-byte little-endian length and a payload.
Request: a pickled ``(kind, fmt, source, reset)`` header, data frames, an empty
frame. Answer: pickled ``("delta", Delta)`` frames until one has ``done``, or
``("error", source, detail)`` for a ParseError, or ``("crash", text)``.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any, BinaryIO

from cockpit.errors import CockpitError, ParseError

_LEN = 8
_ABORT = (1 << 64) - 1  # a data-frame length meaning "the source failed: drop this request"
_DATA_FRAME = 1 << 20
_THREAD_LOADS = 64 * 1024  # unpickle bigger answers off the event loop


class WorkerFailed(CockpitError):
    """The parse worker could not be started, died, or broke the protocol."""


class _SourceFailed(Exception):
    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.exc = exc


# -- worker side ----------------------------------------------------------------
def _read_exact(inp: BinaryIO, n: int) -> bytes | None:
    data = inp.read(n)
    return data if data is not None and len(data) == n else None


_ABORTED = b"<aborted>"  # returned by identity, never compared by value


def _read_frame(inp: BinaryIO) -> bytes | None:
    head = _read_exact(inp, _LEN)
    if head is None:
        return None
    n = int.from_bytes(head, "little")
    if n == _ABORT:
        return _ABORTED
    return _read_exact(inp, n) if n else b""


def _write_frame(out: BinaryIO, payload: bytes) -> None:
    out.write(len(payload).to_bytes(_LEN, "little"))
    out.write(payload)


def serve(inp: BinaryIO, out: BinaryIO) -> None:
    """Answer requests until EOF. Never raises for bad input: it is reported."""
    from cockpit.backends.slurm_delta import JobsDiffer, NodesDiffer, dumps

    differs: dict[tuple[str, str, str], Any] = {}
    while True:
        header = _read_frame(inp)
        if header is None:
            return
        kind, fmt, source, reset = pickle.loads(header)
        buf = bytearray()
        while (frame := _read_frame(inp)) is not None and frame and frame is not _ABORTED:
            buf += frame
        if frame is None:
            return
        if frame is _ABORTED:
            continue  # the command failed half-way: the parent goes on with the next request
        key = (kind, fmt, source)
        if key not in differs:
            differs[key] = JobsDiffer(source) if kind == "jobs" else NodesDiffer(source, fmt)
        try:
            for delta in differs[key].feed(buf, reset):
                _write_frame(out, dumps(("delta", delta)))
        except ParseError as exc:
            _write_frame(out, dumps(("error", exc.source, exc.detail)))
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which falls back
            differs.pop(key, None)
            _write_frame(out, dumps(("crash", f"{type(exc).__name__}: {exc}")))
        del buf
        out.flush()


# -- parent side ----------------------------------------------------------------
def widen_pipe(transport: Any, size: int = _DATA_FRAME) -> None:
    """Grow a pipe's kernel buffer (64 KB by default) to ``size``: 100+ MB pass
    through the event loop per refresh, and each wake-up moves 16x more. Best effort."""
    try:
        import fcntl

        pipe = transport.get_extra_info("pipe")
        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, size)
    except (AttributeError, ImportError, OSError, ValueError):
        pass  # not Linux, or above /proc/sys/fs/pipe-max-size: the default works, slower

class ParseWorker:
    """One worker process; requests are served one at a time, in order.

    Raises WorkerFailed when the process cannot be used (the caller then parses
    in-process) and ParseError for output the parser rejects.
    """

    def __init__(self, python: str | None = None) -> None:
        self.python = python or sys.executable
        self._proc: asyncio.subprocess.Process | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def _ensure(self) -> asyncio.subprocess.Process:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop (tests, a second asyncio.run)
            self.kill()
            self._loop, self._lock = loop, asyncio.Lock()
        if self.running:
            return self._proc  # type: ignore[return-value]
        if self._proc is not None:  # it exited by itself (we forget the ones we kill)
            code, self._proc = self._proc.returncode, None
            raise WorkerFailed(f"parse worker exited (status {code})")
        env = dict(os.environ)
        # the worker imports cockpit from wherever this process did
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        try:
            self._proc = await asyncio.create_subprocess_exec(
                self.python, "-m", "cockpit.core.parseproc",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL, env=env,
            )
        except OSError as exc:
            raise WorkerFailed(f"cannot start the parse worker: {exc}") from None
        widen_pipe(self._proc.stdin.transport)
        widen_pipe(self._proc._transport.get_pipe_transport(1))  # noqa: SLF001 - its stdout pipe
        return self._proc

    async def parse(self, kind: str, fmt: str, source: str, data: Any,
                    reset: bool = False) -> AsyncIterator[Any]:
        """Send ``data``; yield the worker's Deltas until the one marked ``done``.

        ``data``: bytes; or a one-item list holding the bytes (emptied once they
        are sent, so the caller's copy can be freed while the worker parses); or an
        async iterator of chunks (a command's output as it comes: the UI process
        never holds it whole). An exception from the iterator is re-raised as is.

        Raises ParseError (the worker keeps its previous state) or WorkerFailed.
        Leaving the iteration early kills the worker: the next call restarts it
        and must pass ``reset=True``.
        """
        await self._ensure()
        assert self._lock is not None
        async with self._lock:
            proc = await self._ensure()
            finished = False
            try:
                holder = data if isinstance(data, list) else [data] if isinstance(data, bytes) else data
                try:
                    await self._send(proc, pickle.dumps((kind, fmt, source, reset)), holder)
                except _SourceFailed as failed:
                    finished = True  # the worker dropped the request and waits for the next
                    raise failed.exc from None
                while True:
                    msg = await self._receive(proc)
                    if msg[0] == "error":
                        finished = True
                        raise ParseError(msg[1], msg[2])
                    if msg[0] != "delta":
                        raise WorkerFailed(f"parse worker failed: {msg[1] if len(msg) > 1 else msg[0]}")
                    delta = msg[1]
                    if delta.done:
                        finished = True
                    yield delta
                    if finished:
                        return
            except (OSError, EOFError, asyncio.IncompleteReadError, pickle.UnpicklingError,
                    IndexError, TypeError, AttributeError) as exc:
                raise WorkerFailed(f"parse worker stopped: {type(exc).__name__}: {exc}") from None
            finally:
                if not finished:
                    self.kill()

    async def _send(self, proc: Any, header: bytes, holder: Any) -> None:
        w = proc.stdin
        w.write(len(header).to_bytes(_LEN, "little") + header)
        if not isinstance(holder, list):
            await self._send_stream(w, holder)
            return
        view = memoryview(holder[0])
        for i in range(0, len(view), _DATA_FRAME):
            part = view[i:i + _DATA_FRAME]
            w.write(len(part).to_bytes(_LEN, "little"))
            w.write(part)
            await w.drain()  # bounded buffering: never a second copy of the whole output
        w.write(bytes(_LEN))
        await w.drain()
        view.release()
        holder.clear()

    async def _send_stream(self, w: Any, chunks: Any) -> None:
        try:
            async for part in chunks:
                w.write(len(part).to_bytes(_LEN, "little"))
                w.write(part)
                await w.drain()
        except (CockpitError, OSError, asyncio.TimeoutError) as exc:
            w.write(_ABORT.to_bytes(_LEN, "little"))
            await w.drain()
            raise _SourceFailed(exc) from None
        w.write(bytes(_LEN))
        await w.drain()

    async def _receive(self, proc: Any) -> tuple:
        r = proc.stdout
        n = int.from_bytes(await r.readexactly(_LEN), "little")
        payload = await r.readexactly(n)
        if n > _THREAD_LOADS:
            return await asyncio.to_thread(pickle.loads, payload)
        return pickle.loads(payload)

    def kill(self) -> None:
        """Stop the worker now (by its pid); the next parse starts a new one."""
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    async def close(self) -> None:
        """Ask the worker to exit (EOF), killing it if it does not within a second."""
        proc = self._proc
        if proc is None or proc.returncode is not None or self._loop is not asyncio.get_running_loop():
            self.kill()
            return
        try:
            proc.stdin.close()
            await asyncio.wait_for(proc.wait(), 1.0)
        except (asyncio.TimeoutError, OSError):
            self.kill()
        self._proc = None


def main() -> None:
    # SIGINT goes to the whole foreground process group on Ctrl-C: the parent decides.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # background work: when the two compete for a core, the UI process goes first
        os.nice(5)
    except OSError:
        pass
    try:
        serve(sys.stdin.buffer, sys.stdout.buffer)
    except (BrokenPipeError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
