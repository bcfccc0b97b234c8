"""Probes about nodes: Xid and SXid in the kernel (or Fabric Manager) log, InfiniBand
ports, PCIe AER (GPU health and NVLink are in probes_gpu). The kernel-log probes share
one reading of each log (kernellog.py); NVIDIA fault lines it does not understand make
the log UNKNOWN, never healthy. An empty file is n/a ("the file is empty").

Node commands run over SSH, as an srun step or locally (step ``via``);
``--kernel-log``, ``--nvidia-smi``, ``--nvlink`` and ``--ib-root`` replace them
with files copied off a node (post-mortem). A run on files alone connects to
nothing: a probe with no file for it is not applicable, and ``--node`` only
names the node the files came from.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.plugins.api import CockpitError

from . import ib, kernelfindings, kernellog, xid
from .context import NotApplicable, ProbeResult, RunContext, run_on_nodes
from .probes_job import find_job

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


@dataclass(frozen=True, slots=True)
class Source:
    """One text to judge: from a file (post-mortem) or from a node."""

    node: str | None  # the node it came from; None for a file no --node names
    path: str | None  # the file it was read from
    text: str

    def title(self, text: str, gpu: str = "") -> str:
        """A finding's title naming the node and GPU (``node07 GPU 0000:9b:00: ...``); a
        file no --node names gives only the GPU: its path is evidence, not a name."""
        where = " ".join(p for p in (self.node, gpu) if p)
        return f"{where}: {text}" if where else text


def gpu_label(pci: str) -> str:
    """``GPU 0000:9b:00``; the driver's own ``GPU6`` when it gave no bus id."""
    return pci if pci.startswith("GPU") else f"GPU {pci}"


def read_files(paths: tuple[str, ...], what: str) -> dict[str, str]:
    """{path: text}. Raises CockpitError naming the file that cannot be read."""
    out = {}
    for p in paths:
        try:
            out[p] = Path(p).read_bytes().decode("utf-8", "replace")
        except OSError as exc:
            raise CockpitError(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    return out


async def node_sources(rc: RunContext, files: tuple[str, ...], what: str, argv: list[str], via: str) -> tuple[list[Source], ProbeResult]:
    """The texts to judge: the files given, else ``argv`` on each node of --node/--job.

    Raises NotApplicable in a run on files alone without such a file."""
    res = ProbeResult()
    if files:
        texts = read_files(files, what)
        empty = [p for p, t in texts.items() if not t.strip()]
        # An empty file holds nothing to judge: it is said so, and it neither passes nor
        # fails the run (the files beside it still decide).
        res.sources.extend(f"{p}: empty file (nothing to judge)" for p in empty)
        if len(empty) == len(texts):
            raise NotApplicable(f"{what} {', '.join(empty)}: the file is empty: nothing to judge")
        return [Source(rc.node, p, t) for p, t in texts.items() if p not in empty], res
    rc.live(f"{argv[0]} on the node (no {what} FILE given)")
    if rc.job_id and not rc.node:
        await find_job(rc)
    nodes = rc.nodes
    if not nodes:
        res.add("UNKNOWN", "probe.no_node", f"no node to check: give --job, --node or {what} FILE")
        return [], res
    outs = await run_on_nodes(rc, nodes, argv, via)
    srcs = []
    for n, o in outs.items():
        if o.ok:
            srcs.append(Source(n, None, o.text))
        else:
            # The cause in the title (the operator reads titles first); the argv as evidence.
            cause = (o.error.strip().splitlines() or ["no answer"])[-1][:160]
            res.add("UNKNOWN", "probe.failed", f"{n}: {argv[0]} failed: {cause}", o.error[:300],
                    evidence=[" ".join(argv)[:400]])
    return srcs, res


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


def _event_name(e: xid.XidEvent) -> str:
    """``Xid 79``; for a fault the driver logged without an Xid, what it was."""
    if e.xid is not None:
        return f"Xid {e.xid}"
    return "GSP timeout (no Xid)" if e.kind == "gsp" else "fallen off the bus (no Xid)"


def _names(v: xid.GpuVerdict) -> str:
    names = []
    for x in v.xids:
        if x is None:
            kinds = {e.kind for e, _ in v.events if e.xid is None}
            names.append("GSP timeout without Xid" if "gsp" in kinds else "fall-off without Xid")
        elif x == v.root_cause and x not in v.consequences:
            names.append(f"Xid {x} (root cause, named by Xid 45)")
        else:
            names.append(f"Xid {x}" + (" (consequence)" if x in v.consequences else ""))
    return ", ".join(dict.fromkeys(names))


def _judge_source(rc: RunContext, src: Source, res: ProbeResult, drain: dict[str, list[str]]) -> None:
    reading = kernellog.read(src.text)
    fmt = reading.fmt
    if src.path:
        res.sources.append(f"{src.path}: {fmt or 'no kernel log line recognised'}")
    if reading.empty:
        res.add("UNKNOWN", "xid.empty", src.title("the node's kernel log is empty: nothing to judge"))
        return
    if fmt is None and not reading.unknown:
        res.add("UNKNOWN", "xid.unreadable", src.title("not a kernel log (no dmesg/journalctl/NVRM line)"),
                "an input that was not read is never judged healthy")
        return
    _gpu_findings(rc, src, reading, res, drain)
    reasons = kernelfindings.sxid_findings(reading, src.title, res)
    if reasons and src.node:
        drain.setdefault(src.node, []).extend(reasons)
    kernelfindings.unknown_findings(reading, src.title, res, "xid")
    if not (reading.gpus or reading.switches or reading.unknown):
        res.add("OK", "xid.none", src.title(f"no Xid, SXid or GPU fault in the {fmt_name(fmt)}"))


def fmt_name(fmt: str | None) -> str:
    """``kernel log (dmesg -T)``; the Fabric Manager's log by its own name."""
    return "Fabric Manager log" if fmt == kernellog.FABRIC_MANAGER else f"kernel log ({fmt})"


def _gpu_findings(rc: RunContext, src: Source, reading: kernellog.KernelReading, res: ProbeResult,
                  drain: dict[str, list[str]]) -> None:
    for v in reading.gpus:
        code, sev, todo = XID_FINDING.get(v.action, ("xid.contact_support", "WARN", "contact support"))
        ev = [f"line {e.line_no}: {e.stamp + ' ' if e.stamp else ''}{_event_name(e)} -> {c.action}: {e.message[:160]}"
              for e, c in v.events[:8]]
        res.evidence.extend(f"{src.node} {x}" if src.node else x for x in ev)
        mnem = "; ".join(dict.fromkeys(c.mnemonic for _, c in v.events if c.action == v.action or len(v.events) == 1))
        res.add(sev, code, src.title(f"{_names(v)} ({mnem}) -> {v.action}", gpu_label(v.pci)), todo, evidence=ev)
        if sev != "CRIT" or src.node is None:
            continue
        worst = next((e for e, c in v.events if c.action == v.action), v.events[0][0])
        where = v.pci if v.pci.startswith("GPU") else f"PCI {v.pci}"
        drain.setdefault(src.node, []).append(f"{_event_name(worst)} {v.action} {where}")
        hardware = any(x in xid.HARDWARE_XIDS or x is None for x in v.xids)
        before = _history(rc, src.node, v.pci) if hardware else []
        if before:
            res.add("CRIT", "xid.rma", f"{src.node} GPU {v.pci} failed before: consider an RMA",
                    "the same GPU (PCI bus id) was acted on for an Xid earlier", evidence=before)


async def kernel_xid(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """Classify every Xid (and Xid-less GPU fault) in the kernel log of each node into the action it calls for."""
    argv = list(args.get("command", ["dmesg", "-T"]))
    srcs, res = await node_sources(rc, rc.kernel_logs, "--kernel-log", argv, str(args.get("via", "auto")))
    drain: dict[str, list[str]] = {}
    for src in srcs:
        _judge_source(rc, src, res, drain)
    if drain:
        first = next(iter(drain))
        res.facts.update(xid_nodes=",".join(drain), xid_node=first, xid_reason="; ".join(drain[first])[:200])
    return res


async def ib_ports(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """InfiniBand port state, rate and error counters (two reads, ``interval_s`` apart)."""
    res = ProbeResult()
    expected = float(args.get("expected_rate_gbps", rc.config.get("ib_expected_rate_gbps", 0.0)))
    interval = float(args.get("interval_s", rc.config.get("ib_counter_interval_s", 5.0)))
    if rc.ib_root:
        res.sources.append(f"{rc.ib_root}: a copy of /sys/class/infiniband")
        reads = {rc.node or Path(rc.ib_root).name: (None, ib.read_root(rc.ib_root))}
    else:
        first_src, res = await node_sources(rc, (), "--ib-root", list(ib.DUMP_ARGV), str(args.get("via", "auto")))
        await asyncio.sleep(interval)
        second_src, _ = await node_sources(rc, (), "--ib-root", list(ib.DUMP_ARGV), str(args.get("via", "auto")))
        first = {s.node: s.text for s in first_src}
        second = {s.node: s.text for s in second_src}
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
    """PCIe AER error lines in the kernel log, and GPUs that fell off the bus."""
    argv = list(args.get("command", ["dmesg", "-T"]))
    srcs, res = await node_sources(rc, rc.kernel_logs, "--kernel-log", argv, str(args.get("via", "auto")))
    for src in srcs:
        reading = kernellog.read(src.text)
        if src.path:
            res.sources.append(f"{src.path}: {reading.fmt or 'no kernel log line recognised'}")
        if reading.empty or (reading.fmt is None and not reading.unknown):
            res.add("UNKNOWN", "pcie.unreadable", src.title("empty output; AER not checked" if reading.empty
                                                            else "not a kernel log; AER not checked"))
            continue
        found = kernelfindings.pcie_findings(reading, src.text, src.title, res)
        if found and src.node:
            res.facts.setdefault("pcie_node", src.node)
        unknown = kernelfindings.unknown_findings(reading, src.title, res, "pcie", judged=kernelfindings.AER)
        if not found and not unknown:
            res.add("OK", "pcie.no_aer", src.title("no PCIe AER errors and no GPU off the bus in the kernel log"))
    return res


_REASON_XID = re.compile(r"\bXid\W{0,3}(\d{1,3})\b", re.IGNORECASE)


async def slurm_reason(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """What Slurm already says about the node: its state and drain/down reason, who set
    it and when. An Xid named there is evidence even where the kernel log no longer has
    it (a reboot cleared it); it is evidence only, never a reason to act by itself."""
    import time

    from .context import NotApplicable

    if not rc.node:
        raise NotApplicable("no node named")
    if rc.kernel_logs or rc.smi_files or rc.ib_root:
        raise NotApplicable("post-mortem: the files are the evidence, not the live cluster")
    res = ProbeResult()
    node = next((n for n in await rc.ctx.cluster.nodes() if n.name == rc.node), None)
    if node is None:
        res.add("UNKNOWN", "slurm.unknown_node", f"{rc.node}: Slurm does not know this node")
        return res
    state = node.state + "".join(f"+{f}" for f in sorted(node.flags))
    if not node.reason:
        res.add("OK", "slurm.no_reason", f"{rc.node}: {state}, no drain or down reason set")
        return res
    who = f" by {node.reason_user}" if node.reason_user else ""
    when = f", {int((time.time() - node.reason_time) // 60)} min ago" if node.reason_time else ""
    line = f"{rc.node}: {state}, reason {node.reason!r}{who}{when}"
    res.evidence.append(line)
    m = _REASON_XID.search(node.reason)
    entry = xid.catalog_entry(int(m.group(1))) if m else None
    if m is None:
        res.add("OK", "slurm.reason", line)
        return res
    meaning = f" ({entry[0]}: {entry[1]})" if entry else " (not in the catalog)"
    res.add("WARN", "slurm.reason_xid", f"{rc.node}: Slurm's reason names Xid {m.group(1)}{meaning}",
            detail="set" + (who or " by someone") + (when or "") + "; the kernel log step says whether it is still there",
            evidence=[line])
    res.facts.setdefault("slurm_reason_xid", m.group(1))
    return res
