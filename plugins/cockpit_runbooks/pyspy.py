"""``py-spy dump`` output: parse it, group ranks by identical stacks, find the odd one.

A hung collective looks the same on every healthy rank (blocked in
``all_reduce``/``barrier``/``wait``); the rank that is elsewhere (sleeping, in a
data loader, in a dead-locked Python thread) is the straggler. With many ranks
the odd stack is also the one in the smallest group.

py-spy prints ``Thread TID (STATUS): "NAME"``, and ``Thread TID (STATUS)`` alone for a
thread it has no name for (one a C extension or ``_thread`` started); ``--native``
adds native frames, unresolved ones as ``0x7f1bf38a3f16 (libc.so.6)`` (src/dump.rs).
An unresolved address differs in every process (ASLR), so it is dropped from the
stack: the nearest named frame (``pthread_cond_timedwait``,
``gloo::transport::tcp::UnboundBuffer::waitRecv``) stands for it, and the stacks of
two ranks blocked in the same place still compare equal. Recorded forms:
tests/data/pyspy/SOURCES.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_PROCESS = re.compile(r"^Process (\d+): (.*)$")
_THREAD = re.compile(r'^Thread (0x[0-9A-Fa-f]+|\d+) \(([^)]*)\)(?:: "(.*)")?\s*$')
# the file is the last parenthesised part: a C++ name holds " (" of its own ("std::ratio<(long)1, ...")
_FRAME = re.compile(r"^    (\S.*) \(([^()]*)\)\s*$")
# an unresolved native frame: its address, also as a write-up shortens it ("0x... (libGLX_mesa.so.0)"):
# no function name starts with "0x"
_ADDRESS = re.compile(r"^0x(?:[0-9a-fA-F]+|\.\.\.|\u2026)$")
_TEMPLATE = re.compile(r"<[^<>]*>|\([^()]*\)")  # C++ template and signature text inside a native name
_NAME_MAX = 120
# Frames of the C library, the C++ runtime and the interpreter: where every blocked
# thread ends, so they say nothing about where it blocked.
_SYSTEM = re.compile(r"\((?:lib(?:c|pthread|stdc\+\+|gcc_s|dl|rt|m)\b[^)]*|libpython[^)]*|ld-linux[^)]*)\)$")
# Function names (last dotted part) that mean "waiting in a collective or for one".
COLLECTIVES = frozenset({
    "all_reduce", "allreduce", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "reduce_scatter", "reduce_scatter_tensor", "broadcast", "broadcast_object_list", "barrier",
    "monitored_barrier", "all_to_all", "all_to_all_single", "reduce", "gather", "scatter",
    "send", "recv", "isend", "irecv", "batch_isend_irecv", "wait", "synchronize",
})
# Names that are also plain Python (threading's Condition.wait, queue's get, a
# socket's send): they count only in a frame of torch, NCCL or DeepSpeed code.
_GENERIC = frozenset({"wait", "synchronize", "send", "recv", "reduce", "gather", "scatter"})
_DISTRIBUTED_FILE = re.compile(r"torch|nccl|deepspeed|megatron|c10d", re.I)


@dataclass(frozen=True, slots=True)
class Thread:
    tid: str
    state: str  # idle, active, active+gil, gil ...
    name: str  # "" when py-spy printed none
    frames: tuple[str, ...]  # innermost first, "func (file:line)"; unresolved native addresses dropped

    @property
    def active(self) -> bool:
        return self.state.startswith("active")


@dataclass(frozen=True, slots=True)
class Dump:
    pid: int | None
    command: str
    threads: tuple[Thread, ...]

    @property
    def main(self) -> tuple[str, ...]:
        """The main thread's stack (first thread if none is called MainThread)."""
        for t in self.threads:
            if t.name == "MainThread":
                return t.frames
        return self.threads[0].frames if self.threads else ()

    @property
    def ordered(self) -> tuple[Thread, ...]:
        """Active threads first (they hold the CPU or the GIL), then the rest, each in dump order."""
        return tuple(t for t in self.threads if t.active) + tuple(t for t in self.threads if not t.active)


def _frame(name: str, where: str) -> str | None:
    """``func (file:line)``; None for an unresolved native address. Long C++ names
    lose their template arguments and signatures (a pybind11 dispatcher is ~2,000 chars)."""
    if _ADDRESS.match(name):
        return None
    if len(name) > _NAME_MAX:
        while _TEMPLATE.search(name):
            name = _TEMPLATE.sub("", name)
    return f"{name[:_NAME_MAX]} ({where})"


def parse_dump(text: str) -> Dump:
    """Parse one ``py-spy dump --pid PID`` output (locals and native frames ignored)."""
    pid, command = None, ""
    threads: list[Thread] = []
    cur: tuple[str, str, str] | None = None
    frames: list[str] = []
    for line in text.splitlines():
        m = _PROCESS.match(line)
        if m and pid is None:
            pid, command = int(m.group(1)), m.group(2).strip()
            continue
        m = _THREAD.match(line)
        if m:
            if cur:
                threads.append(Thread(*cur, tuple(frames)))
            cur, frames = (m.group(1), m.group(2), m.group(3) or ""), []
            continue
        m = _FRAME.match(line)
        if m and cur:
            f = _frame(m.group(1), m.group(2))
            if f:
                frames.append(f)
    if cur:
        threads.append(Thread(*cur, tuple(frames)))
    return Dump(pid, command, tuple(threads))


def parse_dumps(text: str) -> list[Dump]:
    """Every ``py-spy dump`` in a saved file (one per ``Process N:`` header, in order);
    shell prompts and other lines between them are ignored. A paste of the thread
    stacks alone (no ``Process`` header, as guides quote them) is one dump."""
    chunks: list[list[str]] = []
    for line in text.splitlines():
        if _PROCESS.match(line):
            chunks.append([])
        if chunks:
            chunks[-1].append(line)
    if not chunks:
        chunks = [text.splitlines()]
    return [d for d in (parse_dump("\n".join(c)) for c in chunks) if d.threads]


_COMMAND = re.compile(r"py-spy\s+dump\b.*?(?:--pid|-p)[ =](\d+)")


def requested(text: str) -> list[int]:
    """The pids of the ``py-spy dump --pid N`` command lines a saved file shows (a shell
    session pasted whole): a pid among them without its dump is a dump that is missing."""
    return [int(m.group(1)) for m in map(_COMMAND.search, text.splitlines()) if m]


def label(d: Dump) -> str:
    """``pid 544360``: how a saved dump is named (py-spy does not print the rank);
    ``thread 835995`` (the main thread's id) for a paste without its Process line."""
    if d.pid is not None:
        return f"pid {d.pid}"
    main = next((t for t in d.threads if t.name == "MainThread"), d.threads[0] if d.threads else None)
    return f"thread {main.tid}" if main else "dump"


def active_threads(d: Dump) -> list[str]:
    """One line per active thread: ``thread 13823 (active+gil) at spin (recv.py:11)``."""
    return [f"thread {t.tid}{' ' + repr(t.name) if t.name else ''} ({t.state}) at {at(t.frames)}"
            for t in d.ordered if t.active]


def at(frames: tuple[str, ...]) -> str:
    """Where a stack stands: its innermost frame outside libc/libstdc++/libpython
    (``gloo::transport::tcp::UnboundBuffer::waitRecv (libtorch_cpu.so)``, not
    ``pthread_cond_timedwait (libc.so.6)``)."""
    return next((f for f in frames if not _SYSTEM.search(f)), frames[0] if frames else "(no frames)")


def in_collective(frames: tuple[str, ...]) -> str | None:
    """The first collective frame of a stack, or None."""
    for f in frames:
        name, _, where = f.partition(" (")
        func = name.rsplit(".", 1)[-1]
        if func in COLLECTIVES and (func not in _GENERIC or _DISTRIBUTED_FILE.search(where)):
            return f
    return None


def group_stacks(stacks: Mapping[str, tuple[str, ...]]) -> list[tuple[tuple[str, ...], list[str]]]:
    """[(stack, [labels])], largest group first; labels keep their given order."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for label, frames in stacks.items():
        groups.setdefault(tuple(frames), []).append(label)
    return sorted(groups.items(), key=lambda kv: -len(kv[1]))


@dataclass(frozen=True, slots=True)
class Odd:
    labels: tuple[str, ...]
    reason: str


def find_odd(stacks: Mapping[str, tuple[str, ...]]) -> Odd | None:
    """The rank(s) whose stack stands out, with why; None when nothing does."""
    if len(stacks) < 2:
        return None
    waiting = {k: in_collective(v) for k, v in stacks.items()}
    blocked = [k for k, w in waiting.items() if w]
    elsewhere = [k for k, w in waiting.items() if not w]
    if blocked and elsewhere:
        top = waiting[blocked[0]]
        where = ", ".join(f"{k} at {at(stacks[k])}" for k in elsewhere)
        return Odd(tuple(elsewhere), f"{len(blocked)} rank(s) wait in a collective ({top}); not in one: {where}")
    groups = group_stacks(stacks)
    if len(groups) > 1 and len(groups[0][1]) > 1:
        odd = [label for frames, labels in groups[1:] for label in labels if len(labels) < len(groups[0][1])]
        if odd:
            return Odd(tuple(odd), f"{len(groups[0][1])} ranks share one stack; these differ")
    return None
