"""The probe ``dcgm_series``: the nodes' dcgm-exporter series from the site's
Prometheus (``ctx.gpu_series``, set where [telemetry] prometheus_url is), judged
by dcgmrules, as evidence beside dmesg and nvidia-smi.

No Prometheus configured: the step is n/a (no finding, so never an OK). A node
without series, a kind none of whose series is exported, or Prometheus not
answering: UNKNOWN for that node or kind, never a pass.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from . import dcgmrules
from .context import NotApplicable, ProbeResult, RunContext
from .probes_job import find_job


def _job_gpus(rc: RunContext) -> dict[str, tuple[int, ...]]:
    """node -> the job's GPU indexes there (empty: Slurm gave none, so every GPU of the node)."""
    job = rc.job
    if job is None or rc.node:
        return {}
    out: dict[str, tuple[int, ...]] = {}
    for g in getattr(job, "gpus", ()) or ():
        out[g.node] = tuple(sorted({*out.get(g.node, ()), *g.indexes}))
    return out


async def dcgm_series(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """Xid changes, ECC and remapped rows, NVLink/PCIe error counters, temperature and
    throttling, utilisation flat at 0, from each node's DCGM series over the last hour."""
    source = rc.ctx.gpu_series
    if source is None:
        raise NotApplicable("no Prometheus configured ([telemetry] prometheus_url): the DCGM series were not read")
    rc.live("the DCGM series")
    kinds = tuple(k for k in args.get("kinds", dcgmrules.KINDS))
    unknown = [k for k in kinds if k not in dcgmrules.KIND_SERIES]
    if unknown:
        raise KeyError(f"kinds {unknown} (known: {', '.join(dcgmrules.KINDS)})")
    res = ProbeResult()
    if rc.job_id:
        await find_job(rc)
    nodes = rc.nodes
    if not nodes:
        res.add("UNKNOWN", "dcgm.no_nodes", "no node to read DCGM series for (the job is not in the queue?)")
        return res
    w = dcgmrules.Window(time.time(), float(args.get("window_s", 3600)),
                         idle_s=float(args.get("idle_s", rc.config.get("stale_after_s", 600))),
                         temp_warn_c=float(args.get("temp_warn_c", rc.config.get("temp_warn_c", 85.0))))
    got = await asyncio.gather(*(source.node_series(n, w.seconds) for n in nodes), return_exceptions=True)
    gpus = _job_gpus(rc)
    for node, series in zip(nodes, got):
        _judge_node(res, node, series, kinds, w, gpus.get(node, ()), source.description)
    if rc.facts.get("xid_node"):  # the kernel log's drain reason (it names the PCI bus id) comes first
        res.facts.pop("xid_node", None)
        res.facts.pop("xid_reason", None)
    return res


def _judge_node(res: ProbeResult, node: str, series: Any, kinds: tuple[str, ...], w: dcgmrules.Window,
                gpus: tuple[int, ...], where: str) -> None:
    if isinstance(series, BaseException):
        # one node's failed read costs that node only
        res.add("UNKNOWN", "dcgm.unreadable", f"{node}: DCGM series not read: {series}")
        return
    if not series:
        res.add("UNKNOWN", "dcgm.no_series", f"{node}: no DCGM series in {where} over the last "
                f"{dcgmrules.span(w.seconds)}: not judged")
        return
    verdicts, judged = dcgmrules.judge(series, kinds, w, gpus)
    count = len({i for by_gpu in series.values() for i in by_gpu if not gpus or i in gpus})
    which = f"the job's GPU(s) {','.join(map(str, gpus))}" if gpus else f"{count} GPU(s)"
    res.evidence.append(f"{node}: {which}, {len(series)} DCGM series over the last {dcgmrules.span(w.seconds)} ({where})")
    for v in verdicts:
        res.add(v.severity, v.code, f"{node} {v.text} (DCGM)", v.fix)
    _facts(res, node, verdicts)
    missing = [k for k in kinds if k not in judged]
    for k in missing:
        res.add("UNKNOWN", f"dcgm.not_exported.{k}",
                f"{node}: {k} not judged from DCGM: none of {', '.join(dcgmrules.KIND_SERIES[k])} has "
                "values to compare (not exported, DCGM blanks, or a single sample)")
    parts = dcgmrules.missing_parts(series, [k for k in kinds if k in judged], gpus)
    for kind, part, names in parts:
        res.add("UNKNOWN", f"dcgm.not_exported.{kind}.{part}",
                f"{node}: {kind} judged without {part.replace('_', ' ')}: none of {', '.join(names)} was "
                "exported (the rest of the kind was read)")
    if not missing and not parts and not any(v.severity != "OK" for v in verdicts):
        res.add("OK", "dcgm.ok", f"{node}: no {'/'.join(kinds)} problem in the DCGM series ({which})")


def _facts(res: ProbeResult, node: str, verdicts: list[dcgmrules.Verdict]) -> None:
    """The drain steps' facts (only where the kernel log gave none) and the idle GPUs."""
    drain = [v for v in verdicts if v.code.startswith("xid.drain")]
    if drain:
        res.facts.setdefault("xid_node", node)
        res.facts.setdefault("xid_reason", f"DCGM: {drain[0].text}"[:200])
    idle = [f"{node}:{v.gpu}" for v in verdicts if v.code == "dcgm.idle"]
    if idle:
        res.facts["idle_gpus"] = ",".join(filter(None, [res.facts.get("idle_gpus", ""), *idle]))
