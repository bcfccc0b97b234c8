"""Verdicts from one node's dcgm-exporter series, as Prometheus keeps them
(``ctx.gpu_series.node_series``: series name -> GPU index -> [(t, value)] over the
last hour). Pure functions: the probe (probes_dcgm) reads, these judge.

The series' traps (cockpit/telemetry/dcgm.py says where each is documented):

* ``DCGM_FI_DEV_XID_ERRORS`` is the LAST Xid and never resets: a value is new
  only where it changed within the window; an unchanged one is older than the
  window and said as such, never counted.
* Counters restart at 0 when the exporter or the driver restarts: a drop between
  two samples is a reset, and the sample after it is all increase (as
  Prometheus' ``increase()`` reads it).
* DCGM's "blank" values never arrive here (the client drops them): a kind whose
  series are all missing is "not exported", never a pass; a kind read from two facts
  (thermal: temperature and clock event reasons) with one of them missing is not
  passed whole either (``missing_parts``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cockpit.plugins.api import GpuTelemetry

from . import xid
from .probes_node import XID_FINDING  # the kernel_xid probe's codes: the drain steps act on a new Xid whichever source saw it

Points = Sequence[tuple[float, float]]
Series = Mapping[str, Mapping[int, Points]]

XID = "DCGM_FI_DEV_XID_ERRORS"
UTIL = "DCGM_FI_DEV_GPU_UTIL"
TEMP = "DCGM_FI_DEV_GPU_TEMP"
THROTTLE = ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS")
DBE = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
REMAP_FAIL = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
REMAP_UNCORR = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
PCIE_REPLAY = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
NVLINK_ERRORS = ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
                 "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL")
# The series each kind reads: a kind none of whose series came back is not judged.
KIND_SERIES: dict[str, tuple[str, ...]] = {
    "xid": (XID,),
    "memory": (DBE, REMAP_FAIL, REMAP_UNCORR),
    "nvlink": NVLINK_ERRORS,
    "pcie": (PCIE_REPLAY,),
    "thermal": (TEMP, *THROTTLE),
    "idle": (UTIL,),
}
KINDS = tuple(KIND_SERIES)
# Kinds read from separate facts: each part must have been exported for the kind to pass.
# dcgm-exporter's default-counters.csv exports DCGM_FI_DEV_GPU_TEMP but no clock event
# reasons; a recording with the reasons alone (dcgm-exporter #317) has no temperature.
KIND_PARTS: dict[str, dict[str, tuple[str, ...]]] = {
    "thermal": {"temperature": (TEMP,), "clock_event_reasons": THROTTLE},
}
# Clock event reasons that hold the clocks back for a fault (SW power cap is a GPU at its limit: normal under load).
_HELD_BACK = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")


@dataclass(frozen=True, slots=True)
class Verdict:
    gpu: int
    kind: str
    severity: str  # OK, WARN, CRIT
    code: str
    text: str
    fix: str = ""


@dataclass(frozen=True, slots=True)
class Window:
    """What was asked: the last ``seconds`` up to ``end``; ``idle_s`` for the idle rule."""

    end: float
    seconds: float
    idle_s: float = 600.0
    temp_warn_c: float = 85.0

    @property
    def start(self) -> float:
        return self.end - self.seconds



def gap(pts: Points) -> float:
    """The series' step (the median time between samples): how late a series may begin and
    still count as covering a window."""
    diffs = sorted(b[0] - a[0] for a, b in zip(pts, pts[1:]))
    return diffs[len(diffs) // 2] if diffs else 0.0


def span(seconds: float) -> str:
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds / 60:g} min"


def increase(points: Points) -> float | None:
    """The counter's increase over the points; a drop is a reset (the counter began
    again at 0, so the value after it is all increase). None with fewer than two points."""
    if len(points) < 2:
        return None
    total = 0.0
    for (_, a), (_, b) in zip(points, points[1:]):
        total += b - a if b >= a else b
    return total


def _xid_class(code: int, gpu: int, others: Iterable[int]) -> tuple[str, str, str, str]:
    """(finding code, severity, fix, label) for an Xid the exporter reported."""
    c = xid.classify(xid.XidEvent(0, f"GPU{gpu}", code, ""), others)
    fcode, sev, fix = XID_FINDING.get(c.action, XID_FINDING["CONTACT_SUPPORT"])
    return fcode, sev, fix, f"{c.mnemonic} -> {c.action}"


def judge_xid(gpu: int, pts: Points, w: Window) -> list[Verdict]:
    new = [int(b) for (_, a), (_, b) in zip(pts, pts[1:]) if b != a and b != 0]
    first_t, first = pts[0]
    late = first != 0 and first_t > w.start + 2 * gap(pts)  # the series began inside the window (exporter restart)
    if late and not new:
        fcode, sev, fix, label = _xid_class(int(first), gpu, ())
        sev = "WARN" if sev != "OK" else "OK"  # when it came is not known: not enough to drain on
        return [Verdict(gpu, "xid", sev, "dcgm.xid.unknown_when",
                        f"GPU {gpu}: last Xid {int(first)} ({label}); the series began inside the last "
                        f"{span(w.seconds)} (exporter restart?), so when it came is not known", "read the node's kernel log")]
    out = []
    for code in dict.fromkeys(new):
        fcode, sev, fix, label = _xid_class(code, gpu, new)
        out.append(Verdict(gpu, "xid", sev, fcode,
                           f"GPU {gpu}: DCGM_FI_DEV_XID_ERRORS changed to {code} within the last {span(w.seconds)} ({label})", fix))
    last = int(pts[-1][1])
    if not out and last:
        out.append(Verdict(gpu, "xid", "OK", "dcgm.xid.old",
                           f"GPU {gpu}: last Xid {last} came before the last {span(w.seconds)} (the series keeps "
                           "the last Xid until the exporter restarts; it is not a count)"))
    return out


def judge_memory(gpu: int, s: Mapping[str, Points]) -> list[Verdict]:
    out = []
    if s.get(DBE):
        last, inc = s[DBE][-1][1], increase(s[DBE])
        if last > 0:
            more = f", {inc:g} within the window" if inc else ""
            out.append(Verdict(gpu, "memory", "CRIT", "dcgm.ecc",
                               f"GPU {gpu}: {last:g} uncorrectable ECC errors since the driver loaded{more}",
                               "drain the node and reset the GPU; an RMA if it repeats"))
    if s.get(REMAP_FAIL) and s[REMAP_FAIL][-1][1] >= 1:
        out.append(Verdict(gpu, "memory", "CRIT", "dcgm.remap.failure",
                           f"GPU {gpu}: row remapping failed (out of spare rows)", "drain the node; RMA the GPU"))
    if s.get(REMAP_UNCORR) and s[REMAP_UNCORR][-1][1] > 0:
        inc = increase(s[REMAP_UNCORR])
        more = f", {inc:g} within the window: reset the GPU to activate them" if inc else ""
        out.append(Verdict(gpu, "memory", "WARN", "dcgm.remap.uncorrectable",
                           f"GPU {gpu}: {s[REMAP_UNCORR][-1][1]:g} rows remapped for uncorrectable errors{more}"))
    return out


def judge_counters(gpu: int, s: Mapping[str, Points], kind: str) -> tuple[list[Verdict], bool]:
    """NVLink or PCIe error counters: (verdicts, judged); judged when some counter had two
    samples to compare (NVLink counters all blank do not pass on the PCIe replays' word)."""
    incs = {n: increase(s[n]) for n in KIND_SERIES[kind] if s.get(n)}
    bad = {n.removeprefix("DCGM_FI_DEV_").removesuffix("_COUNT_TOTAL").lower(): v for n, v in incs.items() if v}
    judged = any(v is not None for v in incs.values())
    if not bad:
        return [], judged
    if kind == "pcie":
        return [Verdict(gpu, kind, "WARN", "dcgm.pcie.replays", f"GPU {gpu}: {sum(bad.values()):g} PCIe replays within the window",
                        "check the PCIe link (pcie runbook)")], judged
    return [Verdict(gpu, kind, "WARN", "dcgm.nvlink.errors",
                    f"GPU {gpu}: NVLink errors within the window: " + ", ".join(f"{k} +{v:g}" for k, v in bad.items()),
                    "run the nvlink runbook; reseat or replace the link's GPU/baseboard if they keep growing")], judged


def _reasons(gpu: int, mask: int) -> tuple[str, ...]:
    return GpuTelemetry(index=gpu, clock_event_reasons=mask).clock_events


def judge_thermal(gpu: int, s: Mapping[str, Points], w: Window) -> list[Verdict]:
    out = []
    if s.get(TEMP):
        hottest = max(v for _, v in s[TEMP])
        if hottest >= w.temp_warn_c:
            out.append(Verdict(gpu, "thermal", "WARN", "dcgm.thermal",
                               f"GPU {gpu}: up to {hottest:g} C within the window (threshold {w.temp_warn_c:g} C)",
                               "check the node's airflow and fans (thermal-power runbook)"))
    masks = [int(v) for n in THROTTLE for _, v in s.get(n, ())]
    seen = dict.fromkeys(r for m in masks for r in _reasons(gpu, m))
    held = [r for r in seen if r in _HELD_BACK]
    if held:
        share = sum(1 for m in masks if any(r in _HELD_BACK for r in _reasons(gpu, m)))
        out.append(Verdict(gpu, "thermal", "WARN", "dcgm.throttle",
                           f"GPU {gpu}: clocks held back in {share} of {len(masks)} samples: " + ", ".join(held)))
    elif seen:  # said, so that a reader sees what the bitmask held (and a bit cockpit cannot name)
        out.append(Verdict(gpu, "thermal", "OK", "dcgm.clocks",
                           f"GPU {gpu}: clock event reasons within the window: {', '.join(seen)} "
                           "(none of HW slowdown, HW or SW thermal slowdown, HW power brake)"))
    return out


def missing_parts(series: Series, kinds: Sequence[str], gpus: Sequence[int] = ()) -> list[tuple[str, str, tuple[str, ...]]]:
    """(kind, part, its series) for each part of a judged kind that none of the GPUs (``gpus``;
    empty = all) exported: a kind read from half its series is never passed whole."""
    present = {n for n, by_gpu in series.items() if any(pts for i, pts in by_gpu.items() if not gpus or i in gpus)}
    return [(kind, part, names) for kind in kinds for part, names in KIND_PARTS.get(kind, {}).items()
            if not present & set(names)]


def judge_idle(gpu: int, pts: Points, w: Window) -> tuple[list[Verdict], bool]:
    """Utilisation flat at 0 over the last ``idle_s``: the GPU does nothing (a hang, or a rank
    waiting). Busy is not proof of progress: a rank spinning in NCCL shows 100 %."""
    step = gap(pts)
    recent = [(t, v) for t, v in pts if t >= w.end - w.idle_s - step]
    if len(recent) < 2 or recent[0][0] > w.end - w.idle_s + 2 * step:
        return [], False  # fewer samples than the idle window: not judged
    top = max(v for _, v in recent)
    if top == 0:
        return [Verdict(gpu, "idle", "WARN", "dcgm.idle", f"GPU {gpu}: utilisation 0 % for the last {span(w.idle_s)}",
                        "the job's processes on this GPU launch no kernels: hung, or waiting for another rank")], True
    return [Verdict(gpu, "idle", "OK", "dcgm.busy",
                    f"GPU {gpu}: up to {top:g} % in the last {span(w.idle_s)} (not proof of progress: "
                    "a rank spinning in NCCL shows 100 %)")], True


def judge(series: Series, kinds: Sequence[str], w: Window,
          gpus: Sequence[int] = ()) -> tuple[list[Verdict], set[str]]:
    """Every verdict on one node's series, and the kinds that were judged (some GPU's
    series read and compared). ``gpus``: only these GPUs (a job's); empty = all."""
    present = sorted({i for by_gpu in series.values() for i in by_gpu})
    only = [i for i in present if not gpus or i in gpus]
    out: list[Verdict] = []
    judged: set[str] = set()
    for i in only:
        s = {name: by_gpu[i] for name, by_gpu in series.items() if by_gpu.get(i)}
        if "xid" in kinds and s.get(XID):
            out += judge_xid(i, s[XID], w)
            judged.add("xid")
        if "memory" in kinds and any(n in s for n in KIND_SERIES["memory"]):
            out += judge_memory(i, s)
            judged.add("memory")
        for kind in ("nvlink", "pcie"):
            if kind in kinds:
                v, ok = judge_counters(i, s, kind)
                out += v
                judged |= {kind} if ok else set()
        if "thermal" in kinds and any(n in s for n in KIND_SERIES["thermal"]):
            out += judge_thermal(i, s, w)
            judged.add("thermal")
        if "idle" in kinds and s.get(UTIL):
            v, ok = judge_idle(i, s[UTIL], w)
            out += v
            judged |= {"idle"} if ok else set()
    return out, judged
