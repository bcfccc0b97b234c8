"""What the parse worker and the pyslurm worker share: the frames on their pipes
and the life of the child process.

A frame, either way: an 8-byte little-endian length, then that many bytes. What
the bytes mean (pickled requests and answers, data frames) is each worker's own
protocol, described in :mod:`cockpit.backends.parseproc` and
:mod:`cockpit.backends.pyslurm_worker`.

The child is ``python -m MODULE`` started with asyncio's subprocess support (a
fresh interpreter: nothing of the parent's threads or event loop is inherited).
It serves stdin to stdout and exits at EOF, so it ends with its parent.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
import sys
import tempfile
from collections.abc import Callable
from typing import Any, BinaryIO

from cockpit.errors import CockpitError

LEN = 8
_THREAD_LOADS = 64 * 1024  # about 1000 jobs: unpickle bigger answers off the event loop


# -- worker side ----------------------------------------------------------------
def read_exact(inp: BinaryIO, n: int) -> bytes | None:
    """``n`` bytes of ``inp``, or None when it ends before them."""
    data = inp.read(n)
    return data if data is not None and len(data) == n else None


def read_length(inp: BinaryIO) -> int | None:
    """A frame's length, or None at the end of ``inp``."""
    head = read_exact(inp, LEN)
    return None if head is None else int.from_bytes(head, "little")


def read_payload(inp: BinaryIO, n: int) -> bytes | None:
    """The ``n`` bytes after a frame's length; None when ``inp`` ends before them."""
    return read_exact(inp, n) if n else b""


def read_frame(inp: BinaryIO) -> bytes | None:
    """One frame's bytes, or None at the end of ``inp`` (a cut frame counts as the end)."""
    n = read_length(inp)
    return None if n is None else read_payload(inp, n)


def write_frame(out: Any, payload: bytes | memoryview) -> None:
    """Write one frame to a binary file or an asyncio StreamWriter (not flushed,
    not drained). Two writes: a big payload is not copied to prepend its length."""
    out.write(len(payload).to_bytes(LEN, "little"))
    out.write(payload)


def serve_stdio(serve: Callable[[BinaryIO, BinaryIO], None], nice: int = 0) -> None:
    """A worker's ``main``: ``serve(stdin, stdout)`` until EOF or a broken pipe,
    ``nice`` steps below the parent's priority."""
    # SIGINT goes to the whole foreground process group on Ctrl-C: the parent decides.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice:
        try:
            os.nice(nice)
        except OSError:
            pass
    try:
        serve(sys.stdin.buffer, sys.stdout.buffer)
    except (BrokenPipeError, KeyboardInterrupt):
        pass


# -- parent side ----------------------------------------------------------------
async def receive(proc: Any) -> Any:
    """Read one pickled answer from the child's stdout.

    Raises asyncio.IncompleteReadError when the child died, pickle's errors for a
    broken frame."""
    n = int.from_bytes(await proc.stdout.readexactly(LEN), "little")
    payload = await proc.stdout.readexactly(n)
    if n > _THREAD_LOADS:
        return await asyncio.to_thread(pickle.loads, payload)
    return pickle.loads(payload)


class WorkerProcess:
    """One child process ``python -m`` :attr:`module`, bound to the event loop
    that started it; subclasses say when to start it (their ``_ensure``).

    ``python``: the interpreter (this one by default)."""

    module = ""
    name = "worker"  # in messages: "cannot start the <name>"
    failure: type[CockpitError] = CockpitError  # raised when it cannot start

    def __init__(self, python: str | None = None) -> None:
        self.python = python or sys.executable
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr: Any = None  # the child's stderr, kept so a death can be explained
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    def _follow_loop(self) -> None:
        """A process and a lock serve one event loop: on a new one (tests, a
        second asyncio.run) the old process is killed and a new lock made."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self.kill()
            self._loop, self._lock = loop, asyncio.Lock()

    async def _start(self, env: dict[str, str]) -> asyncio.subprocess.Process:
        """Start the child with ``env``; raises :attr:`failure` when it cannot."""
        env = dict(env)
        # the worker imports cockpit from wherever this process did
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        try:
            # A file, not a pipe: nobody reads it while the child runs, and a pipe
            # would fill and block it. Read only when the child died (last_words).
            if self._stderr is not None:
                self._stderr.close()  # the last child's: it is not asked once a new one starts
            self._stderr = tempfile.TemporaryFile()
            self._proc = await asyncio.create_subprocess_exec(
                self.python, "-m", self.module,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=self._stderr, env=env,
            )
        except OSError as exc:
            raise self.failure(f"cannot start the {self.name}: {exc}") from None
        return self._proc

    def last_words(self, proc: Any = None) -> str:
        """The last line the child wrote to stderr, with its exit status, when it
        has ended (pyslurm's import exits the process with "Could not establish a
        configuration source"); '' while it runs or said nothing."""
        proc = proc or self._proc
        if proc is None or proc.returncode is None or self._stderr is None:
            return ""
        try:
            self._stderr.seek(max(0, self._stderr.seek(0, os.SEEK_END) - 4096))
            tail = self._stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            tail = ""
        lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
        said = f": {lines[-1][:200]}" if lines else ""
        return f"exited with status {proc.returncode}{said}"

    def kill(self) -> None:
        """Stop the worker now (by its pid); the next request starts a new one."""
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
            proc.stdin.close()  # type: ignore[union-attr]
            await asyncio.wait_for(proc.wait(), 1.0)
        except (asyncio.TimeoutError, OSError):
            self.kill()
        self._proc = None
