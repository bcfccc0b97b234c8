"""Judge a burn-in per node: throttling under load, power capped below the limit,
a GPU slower than its peers in the node, new Xid lines and ECC errors, the load's
own verdict; and propose a drain, with a structured reason, for each failing node.

Only samples taken while the load ran count for throttling and clocks. A reading
that could not be taken (nvidia-smi or dmesg failed, no sample under load) is
UNKNOWN, never OK.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Mapping
from typing import Any

from cockpit.plugins.api import CheckResult, Finding, Severity, worst

from cockpit_preflight.burnin_job import NodeBurnin
from cockpit_preflight.common import node_label, pct, slow_members
from cockpit_preflight.nvsmi_q import HW_THROTTLE

_XID = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+),")


def _gpu_key(g) -> str:
    return f"gpu{g.index}" + (f" ({g.bus_id})" if g.bus_id else "")


def _throttle(name: str, nb: NodeBurnin, cap_ratio: float) -> list[Finding]:
    load = nb.phase("load")
    out: list[Finding] = []
    per_gpu: dict[int, dict[str, int]] = {}
    capped: dict[int, list[str]] = {}
    for s in load:
        for g in s.gpus:
            counts = per_gpu.setdefault(g.index, {})
            for r in g.throttle:
                counts[r] = counts.get(r, 0) + 1
            if "sw_power_cap" in g.throttle and g.power_w and g.power_limit_w and g.power_w < cap_ratio * g.power_limit_w:
                capped.setdefault(g.index, []).append(f"{g.power_w:g} W of {g.power_limit_w:g} W")
    for s in load[-1:]:
        for g in s.gpus:
            hw = {r: n for r, n in per_gpu.get(g.index, {}).items() if r in HW_THROTTLE}
            clock = f"; SM {g.sm_mhz:g} MHz" + (f" of {g.sm_max_mhz:g}" if g.sm_max_mhz else "") if g.sm_mhz else ""
            if hw:
                reasons = ", ".join(f"{r} ({n} of {len(load)} samples)" for r, n in sorted(hw.items()))
                short = f"gpu{g.index} {'+'.join(sorted(hw))}" + (f" sm={g.sm_mhz:g}MHz" if g.sm_mhz else "")
                out.append(Finding(Severity.CRIT, f"{name} {_gpu_key(g)}: throttled under load: {reasons}{clock}",
                                   "burnin-throttled", detail=short,
                                   evidence=tuple(e for e in (f"temperature {g.temp_c:g} C" if g.temp_c else "",
                                                              f"power {g.power_w:g} W" if g.power_w else "") if e),
                                   fix="check cooling (fans, airflow, inlet temperature) and power delivery "
                                       "(PSUs, cables, power brake from the BMC) before the run"))
            if capped.get(g.index):
                out.append(Finding(Severity.WARN, f"{name} {_gpu_key(g)}: SW power cap active below the power "
                                                  f"limit ({capped[g.index][-1]})", "burnin-power-capped",
                                   fix="check the node's power budget (BMC power capping, PSU redundancy)"))
            if g.power_limit_w and g.default_limit_w and g.power_limit_w < g.default_limit_w:
                out.append(Finding(Severity.WARN, f"{name} {_gpu_key(g)}: power limit {g.power_limit_w:g} W is "
                                                  f"below the default {g.default_limit_w:g} W", "burnin-power-capped",
                                   fix="nvidia-smi -pl restores it; find who lowered it (BMC, a script)"))
            if g.reasons and "gpu_idle" in g.reasons:
                out.append(Finding(Severity.WARN, f"{name} {_gpu_key(g)}: idle while the load ran",
                                   "burnin-not-loaded", fix="the load did not reach this GPU: check the job's GPUs"))
    return out


def _peers(name: str, nb: NodeBurnin, ratio: float) -> list[Finding]:
    out = []
    clocks: dict[str, list[float]] = {}
    for s in nb.phase("load"):
        for g in s.gpus:
            if g.sm_mhz:
                clocks.setdefault(_gpu_key(g), []).append(g.sm_mhz)
    means = {k: statistics.mean(v) for k, v in clocks.items()}
    for gpu, value, ref in slow_members(means, ratio):
        out.append(Finding(Severity.WARN, f"{name} {gpu}: SM clock {value:.0f} MHz under load, {pct(value / ref)} "
                                          f"of its peers ({ref:.0f} MHz)", "burnin-slow-gpu"))
    rates = {f"{d['device']}": float(d["tflops"]) for d in nb.load_lines if d.get("final") and "tflops" in d}
    for dev, value, ref in slow_members(rates, ratio):
        out.append(Finding(Severity.CRIT, f"{name} {dev}: {value:.3g} TFLOPS, {pct(value / ref)} of its peers "
                                          f"({ref:.3g})", "burnin-slow-gpu",
                           detail=f"{dev} {value:.3g}TFLOPS median={ref:.3g}",
                           fix="drain the node; check this GPU's clocks, PCIe link and cooling"))
    return out


def _errors(name: str, nb: NodeBurnin) -> list[Finding]:
    out = []
    if nb.xid_before is not None and nb.xid_after is not None:
        new = [ln for ln in nb.xid_after if ln not in set(nb.xid_before)]
        if new:
            codes = sorted({m.group(2) for ln in new if (m := _XID.search(ln))})
            out.append(Finding(Severity.CRIT, f"{name}: {len(new)} new Xid line(s) during the burn-in "
                                              f"(Xid {', '.join(codes) or '?'})", "burnin-xid",
                               detail=f"xid={','.join(codes) or '?'}",
                               evidence=tuple(new[:5]), fix="cockpit runbook run gpu-xid --node " + name))
    samples = nb.phase("before")[:1] + nb.phase("after")[-1:]
    if len(samples) == 2:
        before = {g.index: g for g in samples[0].gpus}
        for g in samples[1].gpus:
            b = before.get(g.index)
            for attr, sev, what in (("ecc_uncorrectable", Severity.CRIT, "uncorrectable"),
                                    ("ecc_correctable", Severity.WARN, "correctable")):
                if b and getattr(g, attr) is not None and getattr(b, attr) is not None \
                        and getattr(g, attr) > getattr(b, attr):
                    new = getattr(g, attr) - getattr(b, attr)
                    out.append(Finding(sev, f"{name} {_gpu_key(g)}: {new} new {what} ECC error(s) during the "
                                            "burn-in", "burnin-ecc", detail=f"gpu{g.index} {attr}+{new}"))
    return out


def _load(name: str, nb: NodeBurnin) -> list[Finding]:
    out = []
    if nb.diag is not None:
        for t in nb.diag.failed():
            gpus = ", ".join(k for k, v in t.gpus.items() if v == "fail") or "all"
            out.append(Finding(Severity.CRIT, f"{name}: dcgmi {t.category} {t.name} failed (GPU {gpus})",
                               "burnin-dcgmi", detail=f"dcgmi {t.name.replace(' ', '_')} gpu={gpus.replace(' ', '')}",
                               evidence=tuple(t.warnings[:3])))
        stress = [t for t in nb.diag.tests if t.category.lower() == "stress"]
        if all(t.statuses <= {"skip"} for t in stress):
            what = "skipped every stress test" if stress else "ran no stress test (levels 3 and 4 do)"
            out.append(Finding(Severity.WARN, f"{name}: dcgmi {what}: the GPUs were not put under load",
                               "burnin-not-loaded", fix="run dcgmi diag -r 3 (burnin_dcgmi_level) on a supported GPU"))
    errors = [d for d in nb.load_lines if d.get("error")]
    for d in errors:
        sev = Severity.CRIT if "cuda" in str(d["error"]).lower() else Severity.UNKNOWN
        out.append(Finding(sev, f"{name} {d['device']}: the load failed: {d['error']}", "burnin-load",
                           detail=f"{d['device']} load failed"))
    if nb.load_rc not in (None, 0) and not errors and nb.diag is None:
        last = (nb.load_text.strip().splitlines() or ["no output"])[-1]
        out.append(Finding(Severity.UNKNOWN, f"{name}: the load exited {nb.load_rc}: {last[:160]}", "burnin-load"))
    return out


def drain_reason(findings: list[Finding], job_id: int | None) -> str:
    """A reason Slurm keeps as given, one ``rule: facts`` per CRIT finding:
    ``preflight-burnin throttled: gpu0 hw_slowdown sm=382MHz; xid: xid=79 job=123``."""
    parts = [f"{f.rule.removeprefix('burnin-')}: {f.detail}" for f in findings if f.severity == Severity.CRIT]
    text = "preflight-burnin " + "; ".join(dict.fromkeys(parts))
    tail = f" job={job_id}" if job_id else ""
    return (text if len(text) + len(tail) <= 200 else text[:196 - len(tail)] + " ...") + tail


def judge(nodes: Mapping[str, NodeBurnin], cfg: Mapping[str, Any], *, expected_nodes=(),
          job: Mapping[str, Any] | None = None) -> tuple[CheckResult, dict[str, str]]:
    """The result, and the drain reason of each node with a CRIT finding."""
    findings: list[Finding] = []
    reasons: dict[str, str] = {}
    for name in expected_nodes:
        if name not in nodes:
            findings.append(Finding(Severity.UNKNOWN, f"{name} printed nothing", "burnin-measured"))
    for name, nb in sorted(nodes.items()):
        mine = [Finding(Severity.UNKNOWN, p, "burnin-measured") for p in nb.problems]
        if not nb.phase("load") and nb.engine == "torch":
            mine.append(Finding(Severity.UNKNOWN, f"{name}: no nvidia-smi sample while the load ran",
                                "burnin-measured"))
        mine += _throttle(name, nb, float(cfg["burnin_power_cap_ratio"])) + _peers(name, nb, float(cfg["slow_ratio"]))
        mine += _errors(name, nb) + _load(name, nb)
        if any(f.severity == Severity.CRIT for f in mine) and nb.real_node:
            reasons[name] = drain_reason(mine, (job or {}).get("job_id"))
        findings += mine
    sev = worst(findings) if nodes else Severity.UNKNOWN
    bad = sorted(n for n, nb in nodes.items() if any(f.severity == Severity.CRIT and f.title.startswith(n)
                                                     for f in findings))
    summary = (f"burn-in on {node_label(nodes) if nodes else 'no node'}: "
               + (f"{len(bad)} node(s) failing: {', '.join(bad)}" if bad else f"{sev.name}"))
    data: dict[str, Any] = {"time": int(time.time()), **dict(job or {}), "failing_nodes": bad,
                            "nodes": {n: _node_data(nb) for n, nb in sorted(nodes.items())}}
    return CheckResult("burnin", sev, summary, tuple(findings), data), reasons


def _node_data(nb: NodeBurnin) -> dict[str, Any]:
    return {"engine": nb.engine, "load_rc": nb.load_rc,
            "samples": [{"phase": s.phase, "t": s.t, "gpus": [g.to_dict() for g in s.gpus]} for s in nb.samples],
            "load": [d for d in nb.load_lines if d.get("final")],
            "xid_new": [ln for ln in (nb.xid_after or []) if ln not in set(nb.xid_before or [])],
            "dcgmi": [t.to_dict() for t in nb.diag.tests] if nb.diag else None}
