"""The burn-in job: its script, and what each node's task printed.

Each task reads the kernel's Xid lines and ``nvidia-smi -q`` before the load,
starts the load (``dcgmi diag -r LEVEL`` where the engine is dcgmi, else the
bundled torch matmul load, burnin_load.py), samples ``nvidia-smi -q`` every
``interval`` seconds while the load runs, then reads both again. The load's
text is passed to the task as an argument, so the nodes need torch, not cockpit.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from cockpit.plugins.api import CockpitError, ParseError, UsageError

from cockpit_preflight.common import NodeOutput, Placement, header, parse_job_output, safe, srun_line
from cockpit_preflight.dcgmi import DiagRun, parse_diag
from cockpit_preflight.nvsmi_q import GpuReading, parse_q

LOAD_SCRIPT = Path(__file__).with_name("burnin_load.py")
ENGINES = ("auto", "dcgmi", "torch")
SMI_SECTIONS = "PERFORMANCE,TEMPERATURE,POWER,CLOCK,ECC"

# $1 engine, $2 nvidia-smi, $3 dcgmi, $4 level, $5 python, $6 duration, $7 interval,
# $8 matrix, $9 cpu matrix, $10 cpu threads, $11 the load's Python text.
NODE_SCRIPT = r'''
node=${SLURMD_NODENAME:-$(hostname -s)}
engine=$1 smi=$2 dcgmi=$3 level=$4 py=$5 duration=$6 interval=$7 matrix=$8 cpumatrix=$9 threads=${10} load=${11}
if [ "$engine" = auto ]; then command -v "$dcgmi" >/dev/null 2>&1 && engine=dcgmi || engine=torch; fi
echo "@@preflight node=$node check=burnin engine=$engine"
tmp=$(mktemp -d) || { echo "@@error mktemp failed"; exit 1; }
trap 'kill "$lpid" 2>/dev/null; rm -rf "$tmp"' EXIT
xid() {
  dmesg >"$tmp/dmesg" 2>"$tmp/dmesg.err"; local rc=$?
  echo "@@begin xid phase=$1"; grep -a 'NVRM: Xid' "$tmp/dmesg"; [ $rc = 0 ] || head -n 3 "$tmp/dmesg.err"; echo "@@end rc=$rc"
}
smi() {
  echo "@@begin smi phase=$1 t=$(date +%s)"; "$smi" -q -d PERFORMANCE,TEMPERATURE,POWER,CLOCK,ECC 2>&1; echo "@@end rc=$?"
}
xid before; smi before
if [ "$engine" = dcgmi ]; then
  "$dcgmi" diag -r "$level" >"$tmp/load" 2>&1 &
else
  "$py" -c "$load" --duration "$duration" --matrix "$matrix" --cpu-matrix "$cpumatrix" --threads "$threads" \
    --interval "$interval" >"$tmp/load" 2>&1 &
fi
lpid=$!
warm=$(awk -v d="$duration" -v i="$interval" 'BEGIN { w = d / 4; if (w > i) w = i; print w }')
sleep "$warm"
while kill -0 "$lpid" 2>/dev/null; do smi load; sleep "$interval"; done
wait "$lpid"; rc=$?
echo "@@begin load engine=$engine"; cat "$tmp/load"; echo "@@end rc=$rc"
smi after; xid after
echo "@@begin done"; echo "@@end rc=0"
'''


@dataclass(frozen=True)
class BurninParams:
    engine: str
    nvidia_smi: str
    dcgmi: str
    level: int
    python: str
    duration: int
    interval: float
    matrix: int
    cpu_matrix: int
    cpu_threads: int

    def args(self) -> list[str]:
        if self.engine not in ENGINES:
            raise UsageError(f"bad burnin engine {self.engine!r}: expected one of {', '.join(ENGINES)}")
        if self.duration < 1:
            raise UsageError(f"bad --duration {self.duration}: must be >= 1 second")
        if not 0 < self.interval <= 3600:
            raise UsageError(f"bad burnin interval {self.interval!r}: expected seconds in (0, 3600]")
        if not 1 <= self.level <= 4:
            raise UsageError(f"bad dcgmi level {self.level}: expected 1-4")
        for what in ("matrix", "cpu_matrix", "cpu_threads"):
            if int(getattr(self, what)) < 1:
                raise UsageError(f"bad burnin {what} {getattr(self, what)!r}: must be >= 1")
        return [self.engine, self.nvidia_smi, self.dcgmi, str(self.level), self.python, str(self.duration),
                f"{self.interval:g}", str(self.matrix), str(self.cpu_matrix), str(self.cpu_threads),
                LOAD_SCRIPT.read_text(encoding="utf-8")]


def build_script(params: BurninParams, place: Placement, output: str, time_limit: str, exclusive: bool,
                 gpus_per_node: int) -> str:
    """The sbatch script. Raises UsageError for a value that cannot go into it."""
    for what, prog in (("nvidia-smi", params.nvidia_smi), ("dcgmi", params.dcgmi), ("python", params.python)):
        safe(what, prog)
    lines = header("cockpit-burnin", place, output, time_limit, exclusive, gpus_per_node)
    lines.append(f"# load for {params.duration} s, nvidia-smi every {params.interval:g} s "
                 f"({shlex.quote(params.engine)})")
    lines.append(srun_line(NODE_SCRIPT, params.args()))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- what the tasks printed


@dataclass
class Sample:
    phase: str  # before, load, after
    t: int | None
    gpus: tuple[GpuReading, ...]


@dataclass
class NodeBurnin:
    node: str
    engine: str
    samples: list[Sample] = field(default_factory=list)
    xid_before: list[str] | None = None  # None: dmesg could not be read
    xid_after: list[str] | None = None
    load_rc: int | None = None
    load_lines: list[dict] = field(default_factory=list)  # torch: the JSON lines
    load_text: str = ""
    diag: DiagRun | None = None
    problems: list[str] = field(default_factory=list)
    finished: bool = False
    real_node: bool = True  # a Slurm node name (a job's output, or NODE= on --log): a drain can be proposed

    def phase(self, phase: str) -> list[Sample]:
        return [s for s in self.samples if s.phase == phase]


def _xid(out: NodeOutput, phase: str, nb: NodeBurnin, source: str) -> list[str] | None:
    secs = out.find("xid", phase=phase)
    if not secs:
        nb.problems.append(f"{source}: {nb.node}: no Xid reading {phase} the load")
        return None
    sec = secs[0]
    if sec.rc != 0:
        nb.problems.append(f"{nb.node}: dmesg failed {phase} the load: {' '.join(sec.lines[-1:]) or sec.rc}")
        return None
    return [ln for ln in sec.lines if "NVRM: Xid" in ln]


def _load(out: NodeOutput, nb: NodeBurnin, source: str) -> None:
    secs = out.find("load")
    if not secs:
        nb.problems.append(f"{source}: {nb.node}: the load printed nothing (the task did not reach its end)")
        return
    sec = secs[0]
    nb.load_rc, nb.load_text = sec.rc, sec.text
    if nb.engine == "dcgmi":
        try:
            nb.diag = parse_diag(sec.text, f"{source}: {nb.node} dcgmi diag")
        except CockpitError as exc:
            nb.problems.append(str(exc))
        return
    for line in sec.lines:
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(doc, dict) and "device" in doc:
                nb.load_lines.append(doc)


def node_burnin(out: NodeOutput, source: str) -> NodeBurnin:
    nb = NodeBurnin(out.node, out.attrs.get("engine", "torch"), problems=list(out.errors))
    for sec in out.find("smi"):
        where = f"{source}: {out.node} nvidia-smi ({sec.attrs.get('phase')})"
        try:
            if sec.rc != 0:
                raise ParseError(where, f"exit {sec.rc}: {(sec.lines or ['no output'])[0].strip()[:120]}")
            t = sec.attrs.get("t", "")
            nb.samples.append(Sample(sec.attrs.get("phase", "load"), int(t) if t.isdecimal() else None,
                                     parse_q(sec.text, where)))
        except CockpitError as exc:
            nb.problems.append(str(exc))
    nb.xid_before, nb.xid_after = _xid(out, "before", nb, source), _xid(out, "after", nb, source)
    _load(out, nb, source)
    nb.finished = bool(out.find("done"))
    return nb


def burnin_nodes(text: str, source: str) -> dict[str, NodeBurnin]:
    """Raises ParseError when no task printed a burnin header."""
    return {node: node_burnin(out, source) for node, out in parse_job_output(text, "burnin", source).items()}
