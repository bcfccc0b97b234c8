"""``py-spy dump`` output: parse it, group ranks by identical stacks, find the odd one.

A hung collective looks the same on every healthy rank (blocked in
``all_reduce``/``barrier``/``wait``); the rank that is elsewhere (sleeping, in a
data loader, in a dead-locked Python thread) is the straggler. With many ranks
the odd stack is also the one in the smallest group.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_PROCESS = re.compile(r"^Process (\d+): (.*)$")
_THREAD = re.compile(r'^Thread (0x[0-9A-Fa-f]+|\d+) \(([^)]*)\): "(.*)"\s*$')
_FRAME = re.compile(r"^    (\S.*?) \((.*)\)\s*$")
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
    state: str  # idle, active, gil ...
    name: str
    frames: tuple[str, ...]  # innermost first, "func (file:line)"


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
            cur, frames = (m.group(1), m.group(2), m.group(3)), []
            continue
        m = _FRAME.match(line)
        if m and cur:
            frames.append(f"{m.group(1)} ({m.group(2)})")
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


def label(d: Dump) -> str:
    """``pid 544360``: how a saved dump is named (py-spy does not print the rank);
    ``thread 835995`` (the main thread's id) for a paste without its Process line."""
    if d.pid is not None:
        return f"pid {d.pid}"
    main = next((t for t in d.threads if t.name == "MainThread"), d.threads[0] if d.threads else None)
    return f"thread {main.tid}" if main else "dump"


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
        where = ", ".join(f"{k} at {stacks[k][0] if stacks[k] else '(no frames)'}" for k in elsewhere)
        return Odd(tuple(elsewhere), f"{len(blocked)} rank(s) wait in a collective ({top}); not in one: {where}")
    groups = group_stacks(stacks)
    if len(groups) > 1 and len(groups[0][1]) > 1:
        odd = [label for frames, labels in groups[1:] for label in labels if len(labels) < len(groups[0][1])]
        if odd:
            return Odd(tuple(odd), f"{len(groups[0][1])} ranks share one stack; these differ")
    return None
