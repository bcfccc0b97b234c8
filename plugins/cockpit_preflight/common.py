"""What the pre-flight checks share: the job header, following a job through
``ctx.jobs`` (the gate), and reading the sections each node's task prints.

A pre-flight job runs one task per node (``srun --ntasks-per-node=1 -l``), so
every line of the job's output starts with the task number. Each task prints
``@@preflight node=NAME check=...`` first, then sections::

    @@begin KIND key=value ...
    ...raw output of one command...
    @@end rc=N

Values written into a script are validated (#SBATCH values) or shell-quoted
(``shlex.quote``): node names, partitions and paths are data, never shell.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from cockpit.plugins.api import (
    TERMINAL_STATES, CommandFailed, CommandTimeout, JobOutcome, ParseError, Placement, UsageError,
    collapse, expand, sanitize, sbatch_header,
)
from cockpit.plugins.api import sbatch_value as safe  # the checks validate their own values with it

_LABEL = re.compile(r"^\s*(\d+): ?(.*)$")
_MARK = re.compile(r"^@@(preflight|begin|end|error)\b\s*(.*)$")
_KV = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*)=(\S*)")


def placement(nodes: str | None, partition: str | None, reservation: str | None,
              num_nodes: int | None = None) -> Placement:
    """Raises UsageError for a bad hostlist or when nothing says where to run."""
    names = expand(nodes) if nodes else ()
    if not names and not partition and not reservation:
        raise UsageError("give --nodes HOSTLIST, --partition P or --reservation R (or --log FILE)")
    if num_nodes is not None and num_nodes < 1:
        raise UsageError(f"bad --num-nodes {num_nodes}: must be >= 1")
    return Placement(tuple(names), partition, reservation, num_nodes)


def header(name: str, place: Placement, output: str, time_limit: str, exclusive: bool,
           gpus_per_node: int = 0) -> list[str]:
    """A pre-flight script's first lines: one task per node. Raises UsageError for a
    value that may not stand in an #SBATCH line."""
    lines = sbatch_header(name, place, output, time_limit, exclusive, gpus_per_node=gpus_per_node)
    return lines + ["set -u", "export LC_ALL=C"]


def srun_line(node_script: str, args: Sequence[str]) -> str:
    """One task per node running ``node_script`` with ``args`` as $1.. (all quoted)."""
    return shlex.join(["srun", "--ntasks-per-node=1", "--label", "bash", "-c", node_script,
                       "cockpit-preflight", *[str(a) for a in args]])


async def run_job(jobs, script: str, output_template: str, progress: Callable[[str], None], *, where: str,
                  output_dir: str, poll: float, timeout: float) -> JobOutcome:
    """Submit ``script`` through the gate, follow it to its end, read its output.

    Raises ConfirmationNeeded, ReadOnlyError, Declined, CommandFailed from the
    submission and CommandTimeout after ``timeout`` (the job is cancelled first).
    A cancelled worker (a closed screen) cancels the job too."""
    start = time.monotonic()
    job_id = await jobs.submit(script, where=where, output_dir=output_dir)
    progress(f"submitted job {job_id}")
    state = await _follow(jobs, job_id, progress, poll, timeout)
    path = output_template.replace("%j", str(job_id))
    text = ""
    for attempt in range(5 if state == "COMPLETED" else 1):
        try:
            text = await jobs.read_output(path)
            break
        except CommandFailed as exc:  # shared filesystems lag behind Slurm
            if attempt == 4 or state != "COMPLETED":
                progress(f"job {job_id}: no output ({exc})")
            else:
                await asyncio.sleep(0.5 * (attempt + 1))
    return JobOutcome(job_id, state, text, path, time.monotonic() - start)


async def _follow(jobs, job_id: int, progress: Callable[[str], None], poll: float, timeout: float) -> str:
    start, last = time.monotonic(), None
    try:
        while True:
            try:
                now = await jobs.state(job_id)
            except (CommandFailed, CommandTimeout) as exc:
                now = (last[0] if last else "PENDING", f"squeue failed: {exc}")
            if now != last:
                why = f" ({now[1]})" if now[1] and now[1] != "None" else ""
                progress(f"job {job_id}: {now[0].lower()}{why}")
                last = now
            if now[0] in TERMINAL_STATES:
                return now[0]
            if time.monotonic() - start > timeout:
                await jobs.cancel(job_id, f"still {now[0]} after the check's {timeout:g} s limit")
                raise CommandTimeout(f"job {job_id} still {now[0]} after {timeout:g} s: cancelled")
            await asyncio.sleep(poll)
    except asyncio.CancelledError:
        await jobs.cancel(job_id, "the check was stopped before the job ended")
        raise


# ---------------------------------------------------------------- job output


@dataclass
class Section:
    kind: str
    attrs: dict[str, str]
    lines: list[str] = field(default_factory=list)
    rc: int | None = None  # None: the section never ended (the task died)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class NodeOutput:
    node: str
    attrs: dict[str, str]
    sections: list[Section] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def find(self, kind: str, **attrs: str) -> list[Section]:
        return [s for s in self.sections if s.kind == kind and all(s.attrs.get(k) == v for k, v in attrs.items())]


def _kv(text: str) -> dict[str, str]:
    return dict(_KV.findall(text))


def split_tasks(text: str) -> dict[str, list[str]]:
    """Lines by srun task label; unlabelled lines (a recorded single-node file) go to ``''``."""
    tasks: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = _LABEL.match(line)
        key, body = (m.group(1), m.group(2)) if m else ("", line)
        tasks.setdefault(key, []).append(body)
    return tasks


def parse_job_output(text: str, check: str, source: str) -> dict[str, NodeOutput]:
    """Per-node sections of a pre-flight job's output (or a recorded copy). Escape and
    control characters are dropped first: what a node printed is shown as text.

    Raises ParseError when no task of the ``check`` printed its header."""
    nodes: dict[str, NodeOutput] = {}
    for lines in split_tasks(sanitize(text)).values():
        current: NodeOutput | None = None
        section: Section | None = None
        for line in lines:
            m = _MARK.match(line)
            if not m:
                if section is not None:
                    section.lines.append(line)
                continue
            word, rest = m.groups()
            if word == "preflight":
                attrs = _kv(rest)
                if attrs.get("check") != check or not attrs.get("node"):
                    current = None
                    continue
                current = nodes.setdefault(attrs["node"], NodeOutput(attrs["node"], attrs))
            elif current is None:
                continue
            elif word == "begin":
                kind, _, more = rest.partition(" ")
                section = Section(kind, _kv(more))
                current.sections.append(section)
            elif word == "end" and section is not None:
                rc = _kv(rest).get("rc", "0")
                section.rc = int(rc) if rc.lstrip("-").isdecimal() else 1
                section = None
            elif word == "error":
                current.errors.append(rest.strip())
    if not nodes:
        raise ParseError(source, f"no '@@preflight ... check={check}' header: not a cockpit {check} job output")
    return nodes


# ---------------------------------------------------------------- small helpers

_PARAMS = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMbBtT]?)\s*$")
_MULT = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def parse_params(text: str) -> float:
    """``70B`` -> 7e10 parameters (k, M, B, T suffixes). Raises UsageError naming the value."""
    m = _PARAMS.match(str(text))
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"bad --params {text!r}: expected a model size such as 70B, 7.5B or 350M")
    return float(m.group(1)) * _MULT[m.group(2).lower()]


def others_median(values: dict[str, float], key: str) -> float | None:
    """The median of every value but ``key``'s (None without peers)."""
    rest = [v for k, v in values.items() if k != key]
    return statistics.median(rest) if rest else None


def slow_members(values: dict[str, float], ratio: float) -> list[tuple[str, float, float]]:
    """(name, value, reference) for each member below ``ratio`` x the reference: the
    other member's value when there are two, else the median of all (one slow member
    does not move it, so a healthy one is never named because of it)."""
    if len(values) < 2:
        return []
    out = []
    for key, value in sorted(values.items()):
        ref = others_median(values, key) if len(values) == 2 else statistics.median(values.values())
        if ref and value < ratio * ref:
            out.append((key, value, ref))
    return out


def pct(ratio: float) -> str:
    """0.00052 -> '0.052%' (two significant digits: a throttled node is far below 1%)."""
    text = f"{float(f'{100 * ratio:.2g}'):.8f}".rstrip("0").rstrip(".")
    return f"{text or '0'}%"


def fmt_rate(bytes_per_s: float | None) -> str:
    if bytes_per_s is None:
        return "-"
    for unit, scale in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bytes_per_s >= scale:
            return f"{bytes_per_s / scale:.3g} {unit}"
    return f"{bytes_per_s:.3g} B/s"


def fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.1f} s"


def node_label(nodes: Iterable[str]) -> str:
    return collapse(tuple(nodes)) or "-"
