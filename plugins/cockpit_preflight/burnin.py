"""The ``burnin`` check: every GPU of the chosen nodes under full load for a set time,
sampled and judged; a failing node gets a proposed drain with a structured reason.

``cockpit check burnin --nodes node[01-02] --duration 300`` launches through the
gate; ``--drain`` also drains the failing nodes, each drain confirmed through the
gate (``--yes`` headless, the dialog in the TUI), refused in read-only mode.
``--log FILE`` judges a kept job output, a recorded ``nvidia-smi -q`` (one sample
under load) or a ``dcgmi diag`` table.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cockpit.plugins.api import (
    CheckContext, CheckResult, CockpitError, Declined, Finding, ReadOnlyError, Severity, UsageError,
)

from cockpit_preflight.burnin_job import ENGINES, BurninParams, NodeBurnin, Sample, build_script, burnin_nodes
from cockpit_preflight.burnin_judge import judge
from cockpit_preflight.common import placement, run_job
from cockpit_preflight.dcgmi import looks_like_diag, parse_diag
from cockpit_preflight.nvsmi_q import parse_q
from cockpit_preflight.prometheus import with_prometheus
from cockpit_preflight.settings import merged
from cockpit_preflight.storage import read_log
from cockpit_preflight.targets import usable_nodes


def _log_nodes(spec: str) -> dict[str, NodeBurnin]:
    """``[NODE=]FILE``: a job output names its nodes; a recording is named by NODE= (a
    Slurm node: its drain can be proposed) or by the file name (no drain proposed)."""
    name, sep, path = spec.partition("=")
    if not sep:
        name, path = Path(spec).stem, spec
    text = read_log(path)
    if "@@preflight" in text:
        return burnin_nodes(text, path)
    if looks_like_diag(text):
        nb = NodeBurnin(name, "dcgmi", diag=parse_diag(text, path), finished=True)
    else:
        nb = NodeBurnin(name, "recorded", [Sample("load", None, parse_q(text, path))], finished=True)
    nb.real_node = bool(sep)
    return {name: nb}


class BurninCheck:
    name = "burnin"
    description = "Every GPU under full load through Slurm (dcgmi diag or a torch matmul load), sampled and judged"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("burnin")
        g.add_argument("--log", action="append", default=[], metavar="[NODE=]FILE",
                       help="judge a kept job output, an nvidia-smi -q or a dcgmi diag output (repeatable)")
        g.add_argument("--nodes", metavar="HOSTLIST", help="nodes to burn in, e.g. node[01-04]")
        g.add_argument("--partition", metavar="P", help="partition to run in (and take usable nodes from)")
        g.add_argument("--reservation", metavar="R", help="reservation to run in, e.g. of new nodes")
        g.add_argument("--num-nodes", type=int, metavar="N", help="node count with --reservation alone")
        g.add_argument("--duration", type=int, metavar="S",
                       help="seconds of the torch load (config burnin_duration); dcgmi diag sets its own")
        g.add_argument("--engine", choices=ENGINES, help="auto: dcgmi where present, else torch")
        g.add_argument("--drain", action="store_true", help="drain the failing nodes (each through the gate)")
        g.add_argument("--prometheus", action="store_true", help="node_exporter textfile metrics (in data.prometheus)")

    async def run(self, ctx: CheckContext, args: argparse.Namespace) -> CheckResult:
        """Raises UsageError for bad flags, ParseError for a --log that is none of the
        three formats, ConfirmationNeeded/ReadOnlyError from the gate for the job."""
        cfg = merged(ctx.config, {"burnin_duration": args.duration, "burnin_engine": args.engine})
        if args.log:
            if args.nodes or args.reservation:
                raise UsageError("--log judges files: it does not take --nodes/--reservation")
            nodes: dict[str, NodeBurnin] = {}
            for path in args.log:
                nodes.update(_log_nodes(path))
            result, reasons = judge(nodes, cfg, job={"source": "log", "logs": list(args.log)})
        else:
            result, reasons = await self._launch(ctx, cfg, args)
        result = await self._drains(ctx, result, reasons, args.drain)
        return with_prometheus(result, args)

    async def _launch(self, ctx: CheckContext, cfg: dict, args: argparse.Namespace):
        place = placement(args.nodes, args.partition, args.reservation, args.num_nodes)
        if not place.nodes and args.partition and not args.num_nodes:
            place = placement(",".join(await usable_nodes(ctx, args.partition)), args.partition, args.reservation)
        bp = BurninParams(cfg["burnin_engine"], cfg["burnin_nvidia_smi"], cfg["burnin_dcgmi"],
                          int(cfg["burnin_dcgmi_level"]), cfg["burnin_python"], int(cfg["burnin_duration"]),
                          float(cfg["burnin_interval"]), int(cfg["burnin_matrix"]), int(cfg["burnin_cpu_matrix"]),
                          int(cfg["burnin_cpu_threads"]))
        output = f"{cfg['output_dir']}/cockpit-burnin-%j.out"
        script = build_script(bp, place, output, cfg["time_limit"], bool(cfg["exclusive"]),
                              int(cfg["burnin_gpus_per_node"]))
        ctx.progress(f"burn-in on {place.where}: {bp.duration} s of load ({bp.engine})")
        outcome = await run_job(ctx.jobs, script, output, ctx.progress, where=place.where,
                                output_dir=cfg["output_dir"], poll=float(cfg["poll_interval"]),
                                timeout=float(cfg["job_timeout"]))
        job: dict[str, Any] = {"source": "job", "job_id": outcome.job_id, "job_state": outcome.state,
                               "output": outcome.output_path, "duration": bp.duration}
        try:
            nodes = burnin_nodes(outcome.output, outcome.output_path)
        except CockpitError as exc:
            return CheckResult("burnin", Severity.UNKNOWN, f"job {outcome.job_id} ended {outcome.state}: {exc}",
                               (), job), {}
        result, reasons = judge(nodes, cfg, expected_nodes=place.nodes, job=job)
        if outcome.state != "COMPLETED" and result.severity in (Severity.OK, Severity.WARN):
            result = CheckResult(result.check, Severity.CRIT, f"job {outcome.job_id} ended {outcome.state}; "
                                 f"{result.summary}", result.findings, result.data)
        return result, reasons

    async def _drains(self, ctx: CheckContext, result: CheckResult, reasons: dict[str, str],
                      do_it: bool) -> CheckResult:
        """Plans for every failing node in data.proposed_drains; executed only with ``do_it``,
        each through the gate (a refusal or a "no" is recorded, not raised)."""
        if not reasons:
            return result
        plans = {node: ctx.actions.plan("drain", [node], reason=why) for node, why in sorted(reasons.items())}
        data = {**result.data, "proposed_drains": [p.to_dict() for p in plans.values()]}
        findings = list(result.findings)
        if do_it:
            done = []
            for node, plan in plans.items():
                try:
                    outcome = await ctx.actions.execute(plan)
                    done.append(outcome.to_dict())
                except (ReadOnlyError, Declined) as exc:
                    findings.append(Finding(Severity.WARN, f"{node}: drain not done: {exc}", "burnin-drain"))
            data["drains"] = done
        else:
            findings += [Finding(Severity.OK, f"{node}: proposed drain (run again with --drain to do it)",
                                 "burnin-drain", evidence=tuple(p.describe())) for node, p in plans.items()]
        return CheckResult(result.check, result.severity, result.summary, tuple(findings), data)
