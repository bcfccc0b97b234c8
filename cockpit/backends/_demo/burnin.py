"""What the pre-flight burn-in job prints on each simulated node.

The demo's nodes have torch (``python3``) and nvidia-smi but no DCGM, so
``burnin_engine = auto`` runs the bundled torch load; ``dcgmi`` asked for by
name is not found, as on a node without it. Each task prints the script's
sections: Xid lines from dmesg (none: no GPU fault happens during the run),
``nvidia-smi -q`` before, every ``interval`` seconds under load (at most 60
samples, spread over the run when it is longer) and after, and the load's JSON
lines (bf16 8192 x 8192 matmuls, ~712 TFLOPS per H100 at 1980 MHz).

The scenario's ``throttled_node`` (dgx002 on the default cluster) has a failed
fan in front of GPUs 5 and 6: under load they heat towards 97 C, reach the
slowdown temperature (87 C) about 45 s in, and from then on run HW Slowdown,
HW Thermal Slowdown and SW Thermal Slowdown at ~1060 MHz, ~0.54 of their peers'
matmul rate, and their event reason counters grow (they already hold an hour
of thermal slowdown from earlier jobs). The node's other GPUs run warm but
unthrottled. A burn-in shorter than the warm-up misses it, as a real one would.
Its times run from the job's start as the script's would, though the demo's job
ends at its second squeue look.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from cockpit.backends._demo.gpus import GPU_NAME, bus_id
from cockpit.backends._demo.nccl import jitter
from cockpit.backends._demo.smi_q import MAX_SM, T_LIMIT, GpuState, q_text

THROTTLED_GPUS = (5, 6)
TFLOPS_PEAK = 712.0  # bf16 dense matmul at n=8192, 1980 MHz
MAX_SAMPLES = 60
HAVE = {"nvidia-smi": ("nvidia-smi", "/usr/bin/nvidia-smi"), "python": ("python3", "/usr/bin/python3")}
_SMI_LINE, _DCGMI_LINE, _PY_LINE = 13, 17, 19  # where the node script runs them (bash's "line N")
_PRIOR_US = {"HW Thermal Slowdown": 3_604_117_000, "SW Thermal Slowdown": 3_598_442_000}


@dataclass(frozen=True)
class Params:
    """The burn-in job's arguments ($1..$10 of its node script; $11 is the load's text)."""

    engine: str
    smi: str
    dcgmi: str
    python: str
    duration: int
    interval: float
    matrix: int
    cpu_matrix: int

    @classmethod
    def from_args(cls, args: list[str]) -> Params:
        a = (args + [""] * 11)[:11]

        def num(text: str, default: float) -> float:
            try:
                return float(text) if float(text) > 0 else default
            except ValueError:
                return default

        return cls(a[0] or "auto", a[1] or "nvidia-smi", a[2] or "dcgmi", a[4] or "python3",
                   int(num(a[5], 300)), num(a[6], 5.0), int(num(a[7], 8192)), int(num(a[8], 512)))


def _not_found(prog: str, line: int) -> str:
    why = "No such file or directory" if "/" in prog else "command not found"
    return f"cockpit-preflight: line {line}: {prog}: {why}"


class NodeRun:
    """One node's GPUs through the run: idle, heating under load, cooling after."""

    def __init__(self, node: str, gpus: int, throttled: bool, job_id: int) -> None:
        self.node, self.gpus, self.throttled, self.job_id = node, gpus, throttled, job_id
        self.hot = {i for i in THROTTLED_GPUS if throttled and i < gpus}

    def _key(self, *parts: object) -> str:
        return ":".join(str(p) for p in (self.node, self.job_id, *parts))

    def idle_temp(self, i: int) -> float:
        return 31.0 + 4.0 * (jitter(self._key("idle", i), 0.5) - 0.5) + (3.0 if self.throttled else 0.0)

    def target(self, i: int) -> float:
        if i in self.hot:
            return 97.0
        return (77.0 if self.throttled else 66.0) * jitter(self._key("target", i), 0.03)

    def temp(self, i: int, s: float) -> float:
        """Degrees C ``s`` seconds into the load (a throttled GPU hovers at the slowdown temperature)."""
        idle = self.idle_temp(i)
        t = idle + (self.target(i) - idle) * (1.0 - math.exp(-s / 25.0))
        return min(t, T_LIMIT + 1.0 + (s % 3.0) * 0.5) if i in self.hot else t

    def throttle_from(self, i: int) -> float | None:
        """Seconds into the load when this GPU starts throttling (None: it never does)."""
        if i not in self.hot:
            return None
        idle = self.idle_temp(i)
        return -25.0 * math.log(1.0 - (T_LIMIT - idle) / (self.target(i) - idle))

    def sm(self, i: int, s: float) -> int:
        start = self.throttle_from(i)
        if start is not None and s >= start:
            return int(1035 + 60 * jitter(self._key("sm", i, int(s)), 0.5) - 30)
        return MAX_SM

    def tflops(self, i: int, s: float) -> float:
        return TFLOPS_PEAK * jitter(self._key("tf", i), 0.012) * self.sm(i, s) / MAX_SM

    def counters(self, i: int, s: float) -> dict[str, int]:
        start = self.throttle_from(i)
        if start is None:
            return {}
        extra = int(max(0.0, s - start) * 1e6)
        return {k: v + extra for k, v in _PRIOR_US.items()}

    def state(self, i: int, phase: str, s: float) -> GpuState:
        if phase == "before":
            return GpuState(bus_id(i), round(self.idle_temp(i)), 69.5 + 5 * jitter(self._key("p0", i), 0.5) - 2.5,
                            345, frozenset({"Idle"}), self.counters(i, 0.0))
        if phase == "after":
            return GpuState(bus_id(i), round(self.temp(i, s) - 9), 96.0 * jitter(self._key("p2", i), 0.04), 345,
                            frozenset({"Idle"}), self.counters(i, s))
        start = self.throttle_from(i)
        hot = start is not None and s >= start
        power = (452.0 if hot else 665.0) * jitter(self._key("pw", i, int(s)), 0.035)
        active = frozenset({"HW Slowdown", "HW Thermal Slowdown", "SW Thermal Slowdown"}) if hot else frozenset()
        return GpuState(bus_id(i), round(self.temp(i, s)), power, self.sm(i, s), active, self.counters(i, s))


def sample_offsets(p: Params) -> list[float]:
    """Seconds into the load of each sample under load: after the warm-up, every interval."""
    warm = min(p.duration / 4.0, p.interval)
    count = max(1, math.ceil((p.duration - warm) / p.interval))
    if count <= MAX_SAMPLES:
        return [warm + k * p.interval for k in range(count)]
    step = (p.duration - warm) / MAX_SAMPLES
    return [warm + k * step for k in range(MAX_SAMPLES)]


def _load_lines(run: NodeRun, p: Params, gpus: int, load_start: float, offsets: list[float]) -> list[str]:
    out = ["cockpit demo: SIMULATED load (nothing ran); the rates are made up"]
    if not gpus:
        n = p.cpu_matrix
        rate = 0.049 * jitter(f"{run.node}:cpu", 0.05)
        iters = int(rate * 1e12 * p.duration / (2.0 * n ** 3))
        return out + [json.dumps({"device": "cpu", "name": "cpu", "tflops": rate, "iters": iters,
                                  "seconds": p.duration + 0.0036, "matrix": n, "final": True})]
    scale = min(1.0, (p.matrix / (p.matrix + 256.0)) / (8192 / 8448))
    for s in offsets:
        for i in range(gpus):
            out.append(json.dumps({"device": f"cuda:{i}", "name": GPU_NAME, "tflops": run.tflops(i, s) * scale,
                                   "t": round(load_start + s + 0.0137 * i, 7)}))
    for i in range(gpus):
        steps = max(int(p.duration), 1)
        avg = sum(run.tflops(i, k + 0.5) for k in range(steps)) / steps * scale
        seconds = p.duration + 0.0041 + 0.0007 * i
        iters = int(avg * 1e12 * seconds / (2.0 * p.matrix ** 3))
        out.append(json.dumps({"device": f"cuda:{i}", "name": GPU_NAME, "tflops": avg, "iters": iters,
                               "seconds": seconds, "matrix": p.matrix, "final": True}))
    return out


def node_lines(node: str, job_id: int, start: int, p: Params, gpus: int, throttled: bool) -> list[str]:
    """One node's task output: the header, then the script's sections in its order."""
    engine = "torch" if p.engine == "auto" else p.engine
    run = NodeRun(node, gpus, throttled, job_id)
    has_smi, has_py = p.smi in HAVE["nvidia-smi"], p.python in HAVE["python"]
    out = [f"@@preflight node={node} check=burnin engine={engine} simulated=yes"]
    load_start = start + 2.0
    offsets = sample_offsets(p)
    end = load_start + p.duration if engine == "torch" and has_py else load_start

    def smi(phase: str, when: float, s: float) -> list[str]:
        head = f"@@begin smi phase={phase} t={int(when)}"
        if not has_smi:
            return [head, _not_found(p.smi, _SMI_LINE), "@@end rc=127"]
        if not gpus:
            return [head, "No devices were found", "@@end rc=6"]
        return [head, *q_text(when, [run.state(i, phase, s) for i in range(gpus)]), "@@end rc=0"]

    out += ["@@begin xid phase=before", "@@end rc=0", *smi("before", start + 1.0, 0.0)]
    if engine == "torch" and has_py:
        for s in offsets:
            out += smi("load", load_start + s, s)
        load, rc = _load_lines(run, p, gpus, load_start, offsets), 0
    elif engine == "torch":
        load, rc = [_not_found(p.python, _PY_LINE)], 127
    else:  # no DCGM on the demo's nodes
        load, rc = [_not_found(p.dcgmi, _DCGMI_LINE)], 127
    out += [f"@@begin load engine={engine}", *load, f"@@end rc={rc}"]
    out += smi("after", end + 1.0, p.duration)
    out += ["@@begin xid phase=after", "@@end rc=0", "@@begin done", "@@end rc=0"]
    return out
