"""A long-lived worker process that parses big Slurm outputs and returns deltas.

Parsing 100k jobs costs seconds of CPU; in a thread of the UI process it holds
the GIL and keys wait. The worker parses with :mod:`cockpit.backends.slurm_delta`,
keeps the previous result, and answers with Deltas (only ~1% of the objects per
refresh); job records are cut and parsed as the output arrives, so neither
process ever holds a 100+ MB output whole, and a first load shows its first jobs
before the last one is read. One worker serves jobs and nodes, one request after
the other.

Where the output comes from:

* the worker runs the command itself (``run``: argv, environment, timeout) when
  the Runner is local: not a byte of the output passes through the UI process,
  whose event loop otherwise spent ~200 ms a refresh copying 140 MB of pipe;
* otherwise (SSH, or the first fetch, whose size is not known yet) the backend
  runs it through its Runner and streams the bytes here as data frames, while
  Deltas come back on the other pipe.

The worker is ``python -m cockpit.backends.parseproc`` started with asyncio's
subprocess support: a fresh interpreter (exec, like multiprocessing's "spawn"),
so nothing of the parent's threads or event loop is inherited, the parent's
``__main__`` (the ``cockpit`` script, a bench) is not re-imported as
multiprocessing would, and the pipes are read on the event loop, without helper
threads. If the parent dies the worker reads EOF and exits.

Wire format, both ways: frames of an 8-byte little-endian length and a payload.
Request: a pickled ``(kind, fmt, source, reset[, run])`` header, then (without
``run``) data frames and an empty frame, or an all-ones length if the source
failed. Answer: pickled ``("delta", Delta)`` frames until one has ``done``
(after ``("ran", stderr, size)`` for a command the worker ran), or one final
``("error", source, detail)`` (ParseError), ``("cmd", what, ...)`` (the command
failed: not found, timeout, exit status), ``("aborted",)`` or ``("crash", text)``.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import select
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Generator
from typing import Any, BinaryIO

from cockpit.backends._workerproc import (
    LEN, WorkerProcess, read_length, read_payload, receive, serve_stdio, write_frame,
)
from cockpit.errors import CockpitError, CommandFailed, CommandNotFound, CommandTimeout, ParseError
from cockpit.runner import widen_pipe

_ABORT = (1 << 64) - 1  # a data-frame length meaning "the source failed: drop this request"
_DATA_FRAME = 1 << 20


class WorkerFailed(CockpitError):
    """The parse worker could not be started, died, or broke the protocol."""


def _command_error(run: Any, msg: tuple) -> CockpitError:
    """The worker's ``("cmd", what, ...)`` answer as the local Runner's exception."""
    if msg[1] == "notfound":
        return CommandNotFound(msg[2])
    if msg[1] == "timeout":
        return CommandTimeout(msg[2])
    return CommandFailed(run[0], msg[2], msg[3])


class _SourceFailed(Exception):
    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.exc = exc


# -- worker side ----------------------------------------------------------------
_ABORTED = b"<aborted>"  # returned by identity, never compared by value


def _read_frame(inp: BinaryIO) -> bytes | None:
    n = read_length(inp)
    if n is None:
        return None
    if n == _ABORT:
        return _ABORTED
    return read_payload(inp, n)


class _InputEnded(Exception):
    """The parent closed the pipe mid-request."""


class _Aborted(Exception):
    """The parent's source failed mid-request."""


class _CommandProblem(Exception):
    """The command the worker ran failed; ``msg`` is the answer to send."""

    def __init__(self, msg: tuple) -> None:
        super().__init__(msg)
        self.msg = msg


def _frames(inp: BinaryIO) -> Generator[bytes, None, None]:
    """The data frames of one request, until its empty end frame."""
    while True:
        frame = _read_frame(inp)
        if frame is None:
            raise _InputEnded
        if frame is _ABORTED:
            raise _Aborted
        if not frame:
            return
        yield frame


def _command_output(run: tuple, out: BinaryIO) -> Generator[bytes, None, None]:
    """Run ``(argv, env, timeout)`` and yield its stdout as it comes. At a clean
    end, answer ``("ran", stderr, size)``; otherwise raise _CommandProblem with
    the answer that names the failure (the words of the local Runner)."""
    argv, env, timeout = run
    deadline = time.monotonic() + timeout
    errfile = tempfile.TemporaryFile()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errfile, env=env)
    except FileNotFoundError:
        errfile.close()
        raise _CommandProblem(("cmd", "notfound", f"{argv[0]}: command not found on PATH")) from None
    except PermissionError:
        errfile.close()
        raise _CommandProblem(("cmd", "notfound", f"{argv[0]}: not executable")) from None
    late = _CommandProblem(("cmd", "timeout", f"{argv[0]} did not answer within {timeout:g} s"))
    try:
        fd = proc.stdout.fileno()  # type: ignore[union-attr]
        try:
            import fcntl

            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _DATA_FRAME)  # fewer wake-ups for 100+ MB
        except (ImportError, OSError):
            pass
        poll = select.poll()
        poll.register(fd, select.POLLIN | select.POLLHUP)
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise late
            if not poll.poll(left * 1000):
                continue
            data = os.read(fd, _DATA_FRAME)
            if not data:
                break
            size += len(data)
            yield data
        try:
            rc = proc.wait(max(deadline - time.monotonic(), 0.001))
        except subprocess.TimeoutExpired:
            raise late from None
        errfile.seek(0)
        err = errfile.read().decode("utf-8", "replace")
        if rc != 0:
            raise _CommandProblem(("cmd", "exit", rc, err))
        write_frame(out, pickle.dumps(("ran", err, size)))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        errfile.close()


def serve(inp: BinaryIO, out: BinaryIO) -> None:
    """Answer requests until EOF. Never raises for bad input: it is reported.

    Each request gets exactly one final answer: the Delta marked ``done``,
    ``error``, ``crash``, ``aborted`` (the parent's source failed) or ``cmd`` (the
    command the worker ran failed). Job outputs are parsed as they arrive, so
    Deltas may go out while the parent is still sending."""
    from cockpit.backends.slurm_delta import JobsDiffer, NodesDiffer, dumps

    differs: dict[tuple[str, str, str], Any] = {}
    while True:
        header = _read_frame(inp)
        if header is None:
            return
        request = pickle.loads(header)
        kind, fmt, source, reset = request[:4]
        run = request[4] if len(request) > 4 else None
        chunks = _command_output(run, out) if run is not None else _frames(inp)
        key = (kind, fmt, source)
        if key not in differs:
            differs[key] = JobsDiffer(source) if kind == "jobs" else NodesDiffer(source, fmt)
        differ = differs[key]
        try:
            for delta in differ.feed_stream(chunks, reset):
                write_frame(out, dumps(("delta", delta)))
                out.flush()
        except _InputEnded:
            return
        except _Aborted:
            write_frame(out, dumps(("aborted",)))
        except _CommandProblem as problem:
            write_frame(out, dumps(problem.msg))
        except ParseError as exc:
            write_frame(out, dumps(("error", exc.source, exc.detail)))
            if not _drain(chunks, run):
                return
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which falls back
            differs.pop(key, None)
            write_frame(out, dumps(("crash", f"{type(exc).__name__}: {exc}")))
            if not _drain(chunks, run):
                return
        out.flush()


def _drain(chunks: Generator[bytes, None, None], run: Any) -> bool:
    """Skip the rest of a failed request's input (a command the worker ran is
    killed). False when the parent closed the pipe."""
    if run is not None:
        chunks.close()
        return True
    try:
        for _ in chunks:
            pass
    except _InputEnded:
        return False
    except (_Aborted, _CommandProblem):
        pass
    return True


# -- parent side ----------------------------------------------------------------
class ParseWorker(WorkerProcess):
    """One worker process; requests are served one at a time, in order.

    Raises WorkerFailed when the process cannot be used (the caller then parses
    in-process) and ParseError for output the parser rejects.
    """

    module = "cockpit.backends.parseproc"
    name = "parse worker"
    failure = WorkerFailed

    async def _ensure(self) -> asyncio.subprocess.Process:
        self._follow_loop()
        if self.running:
            return self._proc  # type: ignore[return-value]
        if self._proc is not None:  # it exited by itself (we forget the ones we kill)
            code, self._proc = self._proc.returncode, None
            raise WorkerFailed(f"parse worker exited (status {code})")
        proc = await self._start(dict(os.environ))
        widen_pipe(proc.stdin.transport)
        widen_pipe(proc._transport.get_pipe_transport(1))  # noqa: SLF001 - its stdout pipe
        return proc

    async def parse(self, kind: str, fmt: str, source: str, data: Any, reset: bool = False,
                    run: tuple | None = None, on_ran: Callable[[str, int], None] | None = None,
                    ) -> AsyncIterator[Any]:
        """Send ``data``; yield the worker's Deltas until the one marked ``done``.

        ``data``: bytes; or a one-item list holding the bytes (emptied once they
        are sent, so the caller's copy can be freed while the worker parses); or an
        async iterator of chunks (a command's output as it comes: the UI process
        never holds it whole). An exception from the iterator is re-raised as is.
        Data is sent while Deltas come back: the worker parses jobs as they arrive.

        ``run``: ``(argv, env, timeout)`` instead of data: the worker runs the
        command itself and reads its output, so not a byte of it passes through
        this process; ``on_ran(stderr, size)`` is called when it exited 0, and a
        failure raises CommandNotFound / CommandTimeout / CommandFailed as the
        local Runner would.

        Raises ParseError (the worker keeps its previous state) or WorkerFailed.
        Leaving the iteration early kills the worker: the next call restarts it
        and must pass ``reset=True``.
        """
        await self._ensure()
        assert self._lock is not None
        async with self._lock:
            proc = await self._ensure()
            finished = False
            sending: asyncio.Future | None = None
            try:
                header = (kind, fmt, source, reset) + ((run,) if run is not None else ())
                write_frame(proc.stdin, pickle.dumps(header))
                if run is None:
                    holder = data if isinstance(data, list) else [data] if isinstance(data, bytes) else data
                    sending = asyncio.ensure_future(self._send(proc, holder))
                else:
                    await proc.stdin.drain()
                while True:
                    msg = await receive(proc)
                    tag = msg[0]
                    if tag == "ran":
                        if on_ran is not None:
                            on_ran(msg[1], msg[2])
                        continue
                    if tag == "delta":
                        delta = msg[1]
                        finished = delta.done
                        yield delta
                        if finished:
                            return
                        continue
                    if tag in ("error", "aborted", "cmd"):
                        finished = True
                    if tag == "error":
                        raise ParseError(msg[1], msg[2])
                    if tag == "aborted":
                        assert sending is not None
                        try:
                            await sending
                        except _SourceFailed as failed:
                            raise failed.exc from None
                        raise WorkerFailed("parse worker dropped a request its data completed")
                    if tag == "cmd":
                        raise _command_error(run, msg)
                    raise WorkerFailed(f"parse worker failed: {msg[1] if len(msg) > 1 else msg[0]}")
            except (OSError, EOFError, asyncio.IncompleteReadError, pickle.UnpicklingError,
                    IndexError, TypeError, AttributeError) as exc:
                finished = False
                raise WorkerFailed(f"parse worker stopped: {type(exc).__name__}: {exc}") from None
            finally:
                if sending is not None:
                    if not finished:
                        sending.cancel()
                    # the worker reads a request's data to its end even after an error
                    await asyncio.wait([sending])
                    if not sending.cancelled():
                        sending.exception()  # retrieved: reported through the answer instead
                if not finished:
                    self.kill()

    async def _send(self, proc: Any, holder: Any) -> None:
        w = proc.stdin
        if not isinstance(holder, list):
            await self._send_stream(w, holder)
            return
        view = memoryview(holder[0])
        for i in range(0, len(view), _DATA_FRAME):
            write_frame(w, view[i:i + _DATA_FRAME])
            await w.drain()  # bounded buffering: never a second copy of the whole output
        write_frame(w, b"")
        await w.drain()
        view.release()
        holder.clear()

    async def _send_stream(self, w: Any, chunks: Any) -> None:
        try:
            async for part in chunks:
                write_frame(w, part)
                await w.drain()
        except (CockpitError, OSError, asyncio.TimeoutError) as exc:
            w.write(_ABORT.to_bytes(LEN, "little"))
            await w.drain()
            raise _SourceFailed(exc) from None
        write_frame(w, b"")
        await w.drain()


def main() -> None:
    # background work: when the two compete for a core, the UI process goes first
    serve_stdio(serve, nice=5)


if __name__ == "__main__":
    main()
