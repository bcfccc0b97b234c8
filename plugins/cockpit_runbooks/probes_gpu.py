"""Probes about GPUs: nvidia-smi health rules and NVLink link state, on each node
(SSH/srun fan-out, as the other node probes) or from saved files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cockpit.plugins.api import ParseError, query_argv

from . import gpuhealth, nvlink
from .context import ProbeResult, RunContext
from .probes_node import node_sources

NVLINK_ARGV = ["nvidia-smi", "nvlink", "--status"]


async def gpu_health(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """nvidia-smi rules (kinds: ecc, remap, thermal, power, throttle, pcie) on each node's GPUs.

    A node (or file) that could not be read is UNKNOWN and is never counted in an OK."""
    kinds = set(args.get("kinds", ["ecc", "remap", "thermal", "power", "throttle", "pcie"]))
    srcs, res = await node_sources(rc, rc.smi_files, "--nvidia-smi", query_argv(), str(args.get("via", "auto")))
    temp = float(args.get("temp_warn_c", rc.config.get("temp_warn_c", 85.0)))
    bad: list[str] = []
    judged = 0
    for src in srcs:
        try:
            fmt, gpus = gpuhealth.read_gpus(src.text)
        except ParseError as exc:
            if src.path:
                res.sources.append(f"{src.path}: not read ({exc})")
            res.add("UNKNOWN", "gpu.unparsable", src.title(f"nvidia-smi output not read: {exc}"))
            continue
        count = gpuhealth.distinct(gpus)
        snaps = f" in {len(gpus)} snapshots" if len(gpus) > count else ""
        if src.path:
            res.sources.append(f"{src.path}: {fmt}, {count} GPU(s){snaps}")
        res.evidence.append(src.title(f"{count} GPU(s) read{snaps} ({fmt})"))
        announced = gpuhealth.attached(src.text)
        if announced is not None and len(gpus) < announced:
            res.add("UNKNOWN", "gpu.incomplete",
                    src.title(f"the output announces {announced} GPU block(s) but holds {len(gpus)} (cut?): "
                              "the GPUs missing were not checked"))
        cut = [gpuhealth.gpu_name(g) for g in gpus if not g.complete]
        if cut:
            res.add("UNKNOWN", "gpu.incomplete",
                    src.title(f"{', '.join(dict.fromkeys(cut))}: the -q block ends before its 'Processes' section "
                              "(output cut, or a -q -d subset): what it does not show was not checked"))
        problems = {}
        for g in gpus:
            for p in gpuhealth.check_gpu(g, temp):
                if p.kind in kinds:
                    problems.setdefault((p.kind, p.text), p)  # one GPU's two snapshots say the same thing once
        checked = [p for p in problems.values() if p.checked]
        notes = [p for p in problems.values() if not p.checked]
        for p in checked:
            res.add(p.severity, f"gpu.{p.kind}", src.title(p.text))
            if src.node:
                bad.append(src.node)
        for text in dict.fromkeys(p.text for p in notes):
            kinds_noted = sorted({p.kind for p in notes if p.text == text})
            res.add("OK", f"gpu.not_checked.{kinds_noted[0]}", src.title(text))
        # a kind counts as judged when some rule could read its values on some GPU
        judged_kinds = {p.kind for p in checked} | {k for g in gpus for k in gpuhealth.judged_kinds(g)}
        if not checked and not judged_kinds & kinds:
            res.add("UNKNOWN", "gpu.nothing_judged",
                    src.title(f"nothing could be judged for {'/'.join(sorted(kinds))}: every rule was 'not checked'"))
        else:
            judged += 1
    if bad:
        res.facts.update(gpu_node=bad[0], gpu_nodes=",".join(dict.fromkeys(bad)))
    elif judged and judged == len(srcs) and not any(f.severity.name != "OK" for f in res.findings):
        res.add("OK", "gpu.ok", f"{judged} node(s)/file(s) read: no {'/'.join(sorted(kinds))} problem")
    return res


async def nvlink_status(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """NVLink links down, inactive or below the expected speed, on each node."""
    srcs, res = await node_sources(rc, rc.nvlink_files, "--nvlink", NVLINK_ARGV, str(args.get("via", "auto")))
    expected = float(args.get("expected_gbps", rc.config.get("nvlink_expected_gbps", 0.0))) or None
    bad: list[str] = []
    for src in srcs:
        try:
            rep = nvlink.parse_report(src.text)
        except ParseError as exc:
            if src.path:
                res.sources.append(f"{src.path}: not read ({exc})")
            res.add("UNKNOWN", "nvlink.unparsable", src.title(f"NVLink status not read: {exc}"))
            continue
        gpus = rep.gpus
        links = sum(len(g.links) for g in gpus)
        ref = expected or nvlink.expected_speed(gpus)
        if src.path:
            mig = sum(1 for g in gpus if g.mig)
            res.sources.append(f"{src.path}: nvidia-smi nvlink --status, {len(gpus)} GPU(s), {links} link(s)"
                               + (f", {mig} GPU(s) in MIG mode (NVLink not queryable)" if mig else ""))
        res.evidence.append(src.title(f"{len(gpus)} GPU(s), {links} link(s)" + (f", expected {ref:g} GB/s" if ref else "")))
        if not any(s is not None for g in gpus for s in g.links.values()):
            mig = [p for p in nvlink.check(rep, expected) if p.kind == "mig"]
            for p in mig:  # MIG mode hides NVLink: say so, rather than "no link"
                res.add("UNKNOWN", "nvlink.mig", src.title(p.text))
            if len(mig) < len(gpus):
                res.add("UNKNOWN", "nvlink.none_up",
                        src.title("no NVLink is up (no NVLink bridge, or every link down): not judged"))
            continue
        problems = nvlink.check(rep, expected)
        for p in problems:
            res.add(p.severity, f"nvlink.{p.kind}", src.title(p.text))
            if src.node and p.severity in ("WARN", "CRIT"):
                bad.append(src.node)
        if not problems:
            res.add("OK", "nvlink.ok", src.title(f"{links} NVLink(s) up at {ref:g} GB/s"))
    if bad:
        res.facts.update(nvlink_node=bad[0], nvlink_nodes=",".join(dict.fromkeys(bad)))
    return res
