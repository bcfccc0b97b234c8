"""Probes about nodes: Xid in the kernel log, GPU health, InfiniBand ports, PCIe AER.

Node commands run over SSH, as an srun step or locally (step ``via``);
``--kernel-log``, ``--nvidia-smi`` and ``--ib-root`` replace them with files
copied off a node (post-mortem).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cockpit.plugins.api import CockpitError, ParseError
from cockpit.plugins.api import query_argv

from . import gpuhealth, ib, xid
from .context import ProbeResult, RunContext, run_on_nodes
from .probes_job import find_job

_AER = re.compile(r"AER: .*(error|Error)|PCIe Bus Error")
# Resolved Xid action -> (finding code, severity, what to do)
XID_FINDING = {
    "IGNORE": ("xid.ignore", "OK", "no action needed"),
    "RESTART_APP": ("xid.app.restart_app", "WARN", "restart the application; no drain unless it repeats across jobs"),
    "RESTART_FM": ("xid.app.restart_fm", "WARN", "restart the Fabric Manager"),
    "CONTACT_SUPPORT": ("xid.contact_support", "WARN", "contact support"),
    "RESET_GPU": ("xid.drain.reset_gpu", "CRIT", "drain the node, then reset the GPU (nvidia-smi -r -i GPU, no processes on it)"),
    "DRAIN_AND_RESET": ("xid.drain.drain_and_reset", "CRIT", "drain the node and reset the GPU"),
    "RESTART_BM": ("xid.drain.restart_bm", "CRIT", "drain and reboot (power-cycle) the node"),
}


def _read_files(paths: tuple[str, ...], what: str) -> dict[str, str]:
    out = {}
    for p in paths:
        try:
            out[p] = Path(p).read_bytes().decode("utf-8", "replace")
        except OSError as exc:
            raise CockpitError(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    return out


async def _node_texts(rc: RunContext, files: tuple[str, ...], what: str, argv: list[str], via: str) -> tuple[dict[str, str], ProbeResult]:
    """{node or file label: text} from files (post-mortem) or from each node."""
    res = ProbeResult()
    if files:
        label = rc.node
        return {(label or p): t for p, t in _read_files(files, what).items()}, res
    if rc.job_id and not rc.node:
        await find_job(rc)
    nodes = rc.nodes
    if not nodes:
        res.add("UNKNOWN", "probe.no_node", f"no node to check: give --job, --node or {what} FILE")
        return {}, res
    outs = await run_on_nodes(rc, nodes, argv, via)
    texts = {}
    for n, o in outs.items():
        if o.ok:
            texts[n] = o.text
        else:
            res.add("UNKNOWN", "probe.failed", f"{n}: {' '.join(argv[:2])} failed", o.error[:300])
    return texts, res


def _history(rc: RunContext, node: str, pci: str) -> list[str]:
    """Earlier actions in the audit log that name this GPU on this node."""
    path = rc.ctx.actions.audit_path
    if path is None or not Path(path).is_file():
        return []
    from cockpit.plugins.api import read_audit

    try:
        records = read_audit(path)
    except (OSError, ValueError):
        return []
    hits = []
    for r in records:
        reason = str((r.get("params") or {}).get("reason", ""))
        if r.get("target") == node and pci in reason and r.get("result") == "done":
            hits.append(f"{r.get('time')} {r.get('action')} {node}: {reason}")
    return hits


async def kernel_xid(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """Classify every Xid in the kernel log of each node into the action it calls for."""
    argv = list(args.get("command", ["dmesg", "-T"]))
    texts, res = await _node_texts(rc, rc.kernel_logs, "--kernel-log", argv, str(args.get("via", "auto")))
    drain: dict[str, list[str]] = {}
    for node, text in texts.items():
        verdicts = xid.by_gpu(xid.parse_log(text))
        if not verdicts:
            res.evidence.append(f"{node}: no Xid")
        for v in verdicts:
            code, sev, todo = XID_FINDING.get(v.action, ("xid.contact_support", "WARN", "contact support"))
            names = ", ".join("fall-off without Xid" if x is None else f"Xid {x}" for x in v.xids)
            ev = [f"{node} line {e.line_no}: {e.stamp + ' ' if e.stamp else ''}Xid {e.xid if e.xid is not None else '-'} -> {c.action}: {e.message[:160]}"
                  for e, c in v.events[:8]]
            res.evidence.extend(ev)
            mnem = "; ".join(dict.fromkeys(c.mnemonic for _, c in v.events))
            res.add(sev, code, f"{node} GPU {v.pci}: {names} ({mnem}) -> {v.action}", todo, evidence=ev)
            if sev == "CRIT":
                worst = next((e.xid for e, c in v.events if c.action == v.action and e.xid is not None), 79)
                drain.setdefault(node, []).append(f"Xid {worst} {v.action} PCI {v.pci}")
                hardware = any(x in xid.HARDWARE_XIDS or x is None for x in v.xids)
                before = _history(rc, node, v.pci) if hardware else []
                if before:
                    res.add("CRIT", "xid.rma", f"{node} GPU {v.pci} failed before: consider an RMA",
                            "the same GPU (PCI bus id) was acted on for an Xid earlier", evidence=before)
    if drain:
        first = next(iter(drain))
        res.facts.update(xid_nodes=",".join(drain), xid_node=first, xid_reason="; ".join(drain[first])[:200])
    return res


async def gpu_health(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """nvidia-smi rules (kinds: ecc, remap, thermal, power, throttle, pcie) on each node's GPUs."""
    kinds = set(args.get("kinds", ["ecc", "remap", "thermal", "power", "throttle", "pcie"]))
    texts, res = await _node_texts(rc, rc.smi_files, "--nvidia-smi", query_argv(), str(args.get("via", "auto")))
    temp = float(args.get("temp_warn_c", rc.config.get("temp_warn_c", 85.0)))
    bad: list[str] = []
    for node, text in texts.items():
        try:
            gpus = gpuhealth.parse_any(text)
        except ParseError as exc:
            res.add("UNKNOWN", "gpu.unparsable", f"{node}: {exc}")
            continue
        res.evidence.append(f"{node}: {len(gpus)} GPU(s) read")
        for g in gpus:
            for p in gpuhealth.check_gpu(g, temp):
                if p.kind in kinds:
                    res.add(p.severity, f"gpu.{p.kind}", f"{node} {p.text}")
                    bad.append(node)
    if bad:
        res.facts.update(gpu_node=bad[0], gpu_nodes=",".join(dict.fromkeys(bad)))
    elif texts:
        res.add("OK", "gpu.ok", f"{len(texts)} node(s): no {'/'.join(sorted(kinds))} problem")
    return res


async def ib_ports(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """InfiniBand port state, rate and error counters (two reads, ``interval_s`` apart)."""
    res = ProbeResult()
    expected = float(args.get("expected_rate_gbps", rc.config.get("ib_expected_rate_gbps", 0.0)))
    interval = float(args.get("interval_s", rc.config.get("ib_counter_interval_s", 5.0)))
    if rc.ib_root:
        reads = {rc.node or rc.ib_root: (None, ib.read_root(rc.ib_root))}
    else:
        first, res = await _node_texts(rc, (), "ib", list(ib.DUMP_ARGV), str(args.get("via", "auto")))
        await asyncio.sleep(interval)
        second, _ = await _node_texts(rc, (), "ib", list(ib.DUMP_ARGV), str(args.get("via", "auto")))
        reads = {n: (ib.parse_dump(first[n]), ib.parse_dump(second.get(n, first[n]))) for n in first}
    for node, (before, ports) in reads.items():
        if not ports:
            res.add("OK", "ib.none", f"{node}: no InfiniBand ports")
            continue
        for p in ports:
            res.evidence.append(f"{node} {p.name}: {p.state} {p.phys_state} {p.rate_text} {p.link_layer}; "
                                + " ".join(f"{c}={p.counters.get(c)}" for c in ib.ERROR_COUNTERS if c in p.counters))
        problems = ib.check_ports(ports, expected, before)
        for pr in problems:
            res.add(pr.severity, f"ib.{pr.kind}", f"{node} {pr.text}")
            res.facts.setdefault("ib_node", node)
        if not problems:
            res.add("OK", "ib.ok", f"{node}: {len(ports)} port(s) healthy")
    return res


async def pcie_aer(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """PCIe AER error lines in the kernel log."""
    argv = list(args.get("command", ["dmesg", "-T"]))
    texts, res = await _node_texts(rc, rc.kernel_logs, "--kernel-log", argv, str(args.get("via", "auto")))
    for node, text in texts.items():
        lines = [ln.strip() for ln in text.splitlines() if _AER.search(ln)]
        if lines:
            res.add("WARN", "pcie.aer", f"{node}: {len(lines)} PCIe AER error line(s)", evidence=lines[:10])
            res.facts.setdefault("pcie_node", node)
        else:
            res.add("OK", "pcie.no_aer", f"{node}: no PCIe AER errors in the kernel log")
    return res
