"""Parse nccl-tests text output (and the bundled torch benchmark's, which mimics it).

Handles every variant in ../shared/fixtures/nccl-tests: current columns (with
``root`` and ``#wrong``), the legacy layout (no ``root``, an ``error`` column),
``N/A`` when checking is off, launcher prefixes (``srun -l`` gives ``0: ``,
OpenMPI ``--tag-output`` gives ``[1,0]<stdout>:``), optional per-side columns
(``-I``) read from the header, and "Using devices" rank lines with new
(``[0000:18:00]``) and old (``[0x03]``) bus ids.

A broken MPI launch (a non-MPI binary started N times) prints N headers, each
with "Rank 0": that is reported in ``launch_problems`` and is never judged as
bandwidth.

The oldest builds (~2018-2020, nccl-tests#7 and #37) print the header, the
parameter line and the summary lines without a leading ``#`` and the table
without a ``redop``/``root`` column: those lines are read as their ``#`` forms.
A log that does not name its collective keeps ``collective`` None: nothing
downstream assumes all_reduce for it.

A table with a ``busbw`` column is not nccl-tests output by that alone: NCCL 1.x's
single-process tests (``bytes N type op ... res``, times in ms, ``Device 0 -> 0``
lines) and DeepSpeed's comms logger (``busbw_avg (Gbps)``) print one too. Such a
header is refused by name (ParseError), and rows under it are never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cockpit.plugins.api import ParseError

# Launcher prefixes: srun -l ("0: ", "12: ") and OpenMPI --tag-output ("[1,0]<stdout>:").
_PREFIX = re.compile(r"^\s*(?:(?P<srun>\d+):\s?|\[(?P<job>\d+),(?P<rank>\d+)\]<std(?:out|err)>:\s?)")
_RANK = re.compile(
    r"^#\s+Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+"
    r"(?P<host>\S+)\s+device\s+(?P<device>\d+)\s+\[(?P<busid>[^\]]*)\]\s*(?P<name>.*)$"
)
_PARAMS = re.compile(r"^#\s*nThread\s")
_COLLECTIVE = re.compile(r"^#\s*Collective test (?:starting|concluded):\s*(\S+)")
_VERSION = re.compile(r"^#\s*nccl-tests version\s+(\S+)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<v>[-+0-9.eE]+|nan)\s*(?P<s>OK|FAILED)?")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d+)")
_FAILURE = re.compile(r"(Test (?:NCCL|CUDA) failure|NCCL failure|CUDA failure|Test failure)")
# The test program on a pasted launch line ("mpirun ... ./all_reduce_perf -b 8"): names the collective.
_PROGRAM = re.compile(r"\b(all_reduce|all_gather|alltoall|broadcast|reduce_scatter|reduce|sendrecv|scatter|gather|hypercube)"
                      r"_perf(?:_mpi)?\b")
# The launch line's own rank count: processes before the program (mpirun -np N, srun -n N /
# --ntasks=N), GPUs and threads per process after it (nccl-tests -g G -t T).
_PROCS = re.compile(r"(?:^|\s)(?:-np|-n|--ntasks(?:=|\s))\s*(\d+)\b")
_PER_PROC = re.compile(r"(?:^|\s)-([gt])\s*(\d+)\b")
_PER_NODE = re.compile(r"--ntasks-per-node[= ](\d+)\b")
_NODES = re.compile(r"(?:--nodes[= ]|(?:^|\s)-N\s*)(\d+)\b")
_LAUNCHER = re.compile(r"\b(?:mpirun|mpiexec|orterun|srun|torchrun|aprun|jsrun)\b")
# Header and summary lines that the oldest builds print without the leading "#".
_BARE_COMMENT = re.compile(r"^\s*(?:nThread\s|Out of bounds values\s*:|Avg bus bandwidth\s*:|size\s+count\s|\(B\)\s|"
                           r"out-of-place\s|Using devices|Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s)")
_LEAD = ("size", "count", "type", "redop", "root")
# Tables that carry a busbw column but are not nccl-tests': (their header's first words, their name)
_FOREIGN = ((("bytes", "n", "type", "op"), "NCCL 1.x single-process test output (bytes/N/type/op/res columns, times in ms)"),
            (("`comm.", "op"), "DeepSpeed comms logger summary (busbw_avg in Gbps)"),
            (("comm.", "op"), "DeepSpeed comms logger summary (busbw_avg in Gbps)"))
_SIDE_START = ("time", "cputime")
# Positional fallbacks when an excerpt lacks the header.
_NEW_SIDE = ("time", "algbw", "busbw", "#wrong")
_LEGACY_SIDE = ("time", "algbw", "busbw", "error")


@dataclass(frozen=True, slots=True)
class Side:
    """One half of a row: out-of-place or in-place."""

    time_us: float | None
    algbw: float | None  # GB/s
    busbw: float | None  # GB/s
    wrong: int | None = None  # "#wrong" count; None for N/A or the legacy layout
    error: float | None = None  # legacy "error" column: max numeric error
    extra: tuple[tuple[str, float | None], ...] = ()  # -I columns (i_min, i_max, ...)


@dataclass(frozen=True, slots=True)
class Row:
    size: int  # bytes
    count: int  # elements
    type: str
    redop: str
    root: int | None
    oop: Side | None
    ip: Side | None

    @property
    def busbw(self) -> float:
        """The better of out-of-place and in-place busbw (0.0 when neither parsed)."""
        vals = [s.busbw for s in (self.oop, self.ip) if s is not None and s.busbw is not None]
        return max(vals, default=0.0)

    @property
    def wrong(self) -> int:
        return sum(s.wrong or 0 for s in (self.oop, self.ip) if s is not None)


@dataclass(frozen=True, slots=True)
class RankDevice:
    rank: int
    group: int | None
    pid: int
    host: str
    device: int
    busid: str
    name: str


@dataclass(frozen=True)
class NcclRun:
    """Everything read from one output; no verdict here (see judge.py)."""

    collective: str | None = None
    version: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    rows: tuple[Row, ...] = ()
    devices: tuple[RankDevice, ...] = ()
    avg_busbw: float | None = None  # parsed for display only, never judged alone
    avg_status: str | None = None  # "OK"/"FAILED" when NCCL_TESTS_MIN_BW was set
    out_of_bounds: int | None = None
    legacy: bool = False
    check_enabled: bool | None = None  # False when #wrong is N/A (-c 0)
    launch_problems: tuple[str, ...] = ()
    failures: tuple[str, ...] = ()  # "Test NCCL failure ..." lines
    engine: str = "nccl-tests"
    summary: bool = True  # the "Avg bus bandwidth" line was printed: the output ran to its end
    launch_ranks: int | None = None  # N x G x T from a pasted launch line that states all three parts it uses

    @property
    def hosts(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for d in self.devices:
            seen.setdefault(d.host, None)
        return tuple(seen)

    @property
    def ranks_per_host(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for d in self.devices:
            out[d.host] = out.get(d.host, 0) + 1
        return out

    @property
    def nranks(self) -> int | None:
        """Ranks from the device lines, else from the pasted launch line (``-np 2 ... -g 1``);
        None when the output states neither (an estimate from busbw/algbw is no count)."""
        if self.launch_problems:
            return None
        # an excerpt can cut the "Rank" lines short of the launch line's count (soperator PR #428:
        # 12 Rank lines of --nodes=2 --ntasks-per-node=8): the larger stated figure is the run's
        stated = [n for n in (len({d.rank for d in self.devices}) or None, self.launch_ranks) if n]
        return max(stated, default=None)


def strip_prefix(line: str) -> tuple[str | None, str]:
    """Split a launcher prefix off a line: returns (task id or None, rest)."""
    m = _PREFIX.match(line)
    if not m:
        return None, line
    task = m.group("srun") if m.group("srun") is not None else m.group("rank")
    return task, line[m.end():]


def _num(tok: str) -> float | None:
    if tok in ("N/A", "-", "nan", "-nan", "inf"):
        return None
    try:
        return float(tok)
    except ValueError:
        raise ValueError(tok) from None


def _header_layout(tokens: list[str]) -> tuple[list[str], list[list[str]]] | None:
    """From the column header tokens, the lead columns and each side's column names."""
    if tokens[:2] != ["size", "count"]:
        return None
    lead = [t for t in tokens if t in _LEAD][: len(tokens)]
    rest = tokens[len(lead):]
    sides: list[list[str]] = []
    for tok in rest:
        if tok in _SIDE_START or not sides:
            sides.append([])
        sides[-1].append(tok)
    return lead, sides


def _side(names: list[str], vals: list[str]) -> Side:
    got: dict[str, float | None] = {}
    extra: list[tuple[str, float | None]] = []
    for name, val in zip(names, vals):
        num = _num(val)
        if name in ("time", "cputime", "algbw", "busbw", "#wrong", "error"):
            got[name] = num
        else:
            extra.append((name, num))
    wrong = got.get("#wrong")
    return Side(
        time_us=got.get("time", got.get("cputime")),
        algbw=got.get("algbw"),
        busbw=got.get("busbw"),
        wrong=int(wrong) if wrong is not None else None,
        error=got.get("error"),
        extra=tuple(extra),
    )


def _row(tokens: list[str], lead: list[str], sides: list[list[str]]) -> Row:
    fields = dict(zip(lead, tokens))
    pos = len(lead)
    parsed: list[Side] = []
    for names in sides:
        parsed.append(_side(names, tokens[pos:pos + len(names)]))
        pos += len(names)
    root = fields.get("root")
    return Row(
        size=int(fields["size"]),
        count=int(fields["count"]),
        type=fields.get("type", ""),
        redop=fields.get("redop", ""),
        root=int(root) if root not in (None, "-") else None,
        oop=parsed[0] if parsed else None,
        ip=parsed[1] if len(parsed) > 1 else None,
    )


def _guess_layout(tokens: list[str]) -> tuple[list[str], list[list[str]]]:
    """Layout for rows seen before any header (excerpts): by token count."""
    if len(tokens) == 13:
        return list(_LEAD), [list(_NEW_SIDE), list(_NEW_SIDE)]
    if len(tokens) == 12:
        return list(_LEAD[:4]), [list(_LEGACY_SIDE), list(_LEGACY_SIDE)]
    raise ValueError(f"{len(tokens)} columns and no header line")


_PARAM_KV = re.compile(
    r"(nThread|nGpus|minBytes|maxBytes|step:|warmup iters:|agg iters:|iters:|validation:|graph:)\s*(\S+)"
)


class _State:
    def __init__(self) -> None:
        self.layout: tuple[list[str], list[list[str]]] | None = None
        self.rows: list[Row] = []
        self.devices: list[RankDevice] = []
        self.header_tasks: list[str | None] = []
        self.params: dict[str, str] = {}
        self.collective: str | None = None
        self.version: str | None = None
        self.avg: float | None = None
        self.avg_status: str | None = None
        self.oob: int | None = None
        self.failures: list[str] = []
        self.engine = "nccl-tests"
        self.program: str | None = None  # the collective a launch line names
        self.launch_ranks: int | None = None
        self.summary = False
        self.foreign: str | None = None  # the name of a foreign busbw table seen before any nccl-tests header


def _processes(before: str) -> int | None:
    """The process count the launcher part of a line states: -np/-n/--ntasks, srun's
    --nodes x --ntasks-per-node, 1 for the program started alone; None when a launcher
    leaves it unsaid (a hostfile's slots)."""
    procs = _PROCS.findall(before)
    if procs:
        return int(procs[-1])
    per_node, nodes = _PER_NODE.search(before), _NODES.search(before)
    if per_node and nodes:
        return int(per_node.group(1)) * int(nodes.group(1))
    return None if _LAUNCHER.search(before) else 1


def _launch_ranks(body: str, prog: re.Match) -> int | None:
    """Processes x GPUs x threads of a launch line; None without a process count."""
    procs = _processes(body[:prog.start()])
    if procs is None:
        return None
    per = dict(_PER_PROC.findall(body[prog.end():]))
    return procs * int(per.get("g", 1)) * int(per.get("t", 1))


def _foreign(st: _State, body: str) -> bool:
    """Note a header with a busbw column that is not nccl-tests'; True when ``body`` is one."""
    tokens = body.lstrip("#").split()
    if not any("busbw" in t.lower() for t in tokens) or _header_layout(tokens):
        return False
    low = [t.lower() for t in tokens]
    name = next((n for lead, n in _FOREIGN if tuple(low[:len(lead)]) == lead), None)
    st.foreign = st.foreign or name or f"a table that is not nccl-tests' (columns: {' '.join(tokens[:12])[:120]})"
    return True


def _comment(st: _State, task: str | None, body: str) -> None:
    if _PARAMS.match(body):
        st.header_tasks.append(task)
        st.params = {k.rstrip(":"): v for k, v in _PARAM_KV.findall(body)}
    elif m := _RANK.match(body):
        st.devices.append(RankDevice(
            rank=int(m["rank"]), group=int(m["group"]) if m["group"] else None,
            pid=int(m["pid"]), host=m["host"], device=int(m["device"]),
            busid=m["busid"], name=m["name"].strip(),
        ))
    elif m := _COLLECTIVE.match(body):
        st.collective = m[1].removesuffix("_perf").removesuffix("_mpi").removesuffix("_perf")
    elif m := _VERSION.match(body):
        st.version = m[1]
    elif m := _AVG.match(body):
        st.avg = None if m["v"] == "nan" else float(m["v"])
        st.avg_status = m["s"]
        st.summary = True
    elif m := _OOB.match(body):
        st.oob = int(m["n"])
    elif "torch.distributed" in body and "engine" in body:
        st.engine = "torch"
    elif not _foreign(st, body):
        layout = _header_layout(body.lstrip("#").split())
        if layout:
            st.layout = layout


def _data(st: _State, lineno: int, body: str, source: str) -> None:
    tokens = body.split()
    if _foreign(st, body):
        return
    if len(tokens) < 8 or not (tokens[0].isdecimal() and tokens[1].isdecimal()):
        if _FAILURE.search(body):
            st.failures.append(body.strip())
        return
    if st.layout is None and st.foreign:
        return  # a row of the foreign table: its columns are not nccl-tests'

    try:
        layout = st.layout or _guess_layout(tokens)
        need = len(layout[0]) + sum(len(s) for s in layout[1])
        if len(tokens) < need:
            # A row that trails off (an excerpt, or a process killed mid-line) is skipped.
            return
        st.rows.append(_row(tokens, *layout))
    except (ValueError, KeyError) as exc:
        raise ParseError(source, f"line {lineno}: bad data row ({exc}): {body.strip()[:80]!r}") from None


def _launch_problems(st: _State) -> list[str]:
    problems: list[str] = []
    if len(st.header_tasks) > 1:
        problems.append(
            f"{len(st.header_tasks)} test headers printed: every process believes it is alone "
            "(non-MPI binary, or srun without --mpi=pmix)"
        )
    by_rank: dict[int, set[tuple[str, int]]] = {}
    for d in st.devices:
        by_rank.setdefault(d.rank, set()).add((d.host, d.pid))
    # A GPU-per-thread run (-g N) shows one pid for many ranks; that is fine. The same
    # rank number from different processes is not.
    dup = sorted(r for r, owners in by_rank.items() if len(owners) > 1)
    if dup:
        hosts = sorted({h for r in dup for h, _ in by_rank[r]})
        problems.append(
            f"rank(s) {', '.join(map(str, dup))} reported by several processes on "
            f"{', '.join(hosts)}: the ranks never formed one communicator"
        )
    return problems


def parse(text: str, source: str = "nccl-tests output") -> NcclRun:
    """Parse nccl-tests (or torch_bench) output.

    Raises ParseError naming ``source`` when a data row is malformed or when the
    text holds nothing that nccl-tests prints.
    """
    st = _State()
    for lineno, raw in enumerate(text.splitlines(), 1):
        task, body = strip_prefix(raw.rstrip("\r\n"))
        prog = _PROGRAM.search(body) if st.program is None else None
        if prog:
            st.program = prog.group(1)
            st.launch_ranks = _launch_ranks(body, prog)
        if body.lstrip().startswith("#"):
            _comment(st, task, body.strip())
        elif _BARE_COMMENT.match(body):
            _comment(st, task, "# " + body.strip())
        else:
            _data(st, lineno, body, source)
    if st.foreign and not st.rows:
        raise ParseError(source, f"{st.foreign}, not nccl-tests output: not judged")
    if not (st.rows or st.devices or st.header_tasks or st.layout):
        raise ParseError(source, "no nccl-tests header, device line or data row found")
    side = st.layout[1][0] if st.layout and st.layout[1] else []
    legacy = "error" in side or (st.layout is not None and "root" not in st.layout[0])
    wrong_seen = [s.wrong for r in st.rows for s in (r.oop, r.ip) if s is not None]
    check = None
    if st.rows and not legacy:
        check = any(w is not None for w in wrong_seen)
    return NcclRun(
        collective=st.collective or st.program, version=st.version, params=st.params,
        rows=tuple(st.rows), devices=tuple(st.devices), avg_busbw=st.avg,
        avg_status=st.avg_status, out_of_bounds=st.oob, legacy=legacy,
        check_enabled=check, launch_problems=tuple(_launch_problems(st)),
        failures=tuple(st.failures), engine=st.engine, summary=st.summary, launch_ranks=st.launch_ranks,
    )
