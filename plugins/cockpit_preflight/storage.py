"""The ``storage`` check: local scratch and shared filesystem figures per node,
measured by a Slurm job (fio, or dd where fio is missing), judged.

``cockpit check storage --nodes node[01-02] --local /scratch --shared /lustre/ckpt
[--params 70B]`` launches (through the gate: ``--yes`` headless, the dialog in
the TUI, refused in read-only mode); ``--log FILE`` judges a job output kept from
an earlier run, or one fio JSON file (``--log-path`` says which path it measured).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cockpit.plugins.api import CheckContext, CheckResult, CockpitError, Severity, UsageError, sanitize

from cockpit_preflight.common import JobOutcome, node_label, parse_params, placement, run_job
from cockpit_preflight.fio import META_ENGINES, parse_fio_json
from cockpit_preflight.prometheus import with_prometheus
from cockpit_preflight.settings import merged
from cockpit_preflight.storage_job import NodeFigures, PathFigures, StorageParams, build_script, figures
from cockpit_preflight.storage_judge import judge
from cockpit_preflight.targets import node_partitions, usable_nodes

_FLAGS = {"local": "storage_local_path", "shared": "storage_shared_path", "size": "storage_size",
          "runtime": "storage_runtime"}


def read_log(path: str) -> str:
    """The file's text, escape and control characters dropped (it is shown as text).
    Raises UsageError naming the file when it cannot be read."""
    try:
        return sanitize(Path(path).read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        raise UsageError(f"cannot read --log {path!r}: {exc.strerror}") from None


def _fio_figures(text: str, source: str, node: str, kind: str) -> NodeFigures:
    run = parse_fio_json(text, source)
    fig = PathFigures(kind)
    for job in run.jobs:
        if job.error:
            fig.problems.append(f"{source}: fio job {job.name!r} reported error {job.error}")
        elif job.ioengine in META_ENGINES:
            fig.meta[job.ioengine.removeprefix("file").replace("delete", "unlink")] = job.iops
        elif job.rw == "randread":
            fig.randread_iops = job.iops
        elif job.rw in ("read", "write"):
            setattr(fig, f"seq{job.rw}", job.bandwidth)
        else:
            fig.problems.append(f"{source}: fio job {job.name!r} ran rw={job.rw}: not a figure this check judges")
    return NodeFigures(node, "fio", {kind: fig})


class StorageCheck:
    name = "storage"
    description = "Local scratch and shared filesystem speed per node through Slurm (fio), judged; checkpoint time"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("storage")
        g.add_argument("--log", action="append", default=[], metavar="FILE",
                       help="judge a kept job output, or a fio JSON file (repeatable)")
        g.add_argument("--log-path", choices=("local", "shared"), default="local",
                       help="which path a fio JSON --log measured (default local)")
        g.add_argument("--log-node", metavar="NAME", help="node name for a fio JSON --log (default: the file name)")
        g.add_argument("--nodes", metavar="HOSTLIST", help="nodes to measure, e.g. node[01-04]")
        g.add_argument("--partition", metavar="P", help="partition to run in (and take usable nodes from)")
        g.add_argument("--reservation", metavar="R", help="reservation to run in, e.g. of new nodes")
        g.add_argument("--num-nodes", type=int, metavar="N", help="node count with --reservation alone")
        g.add_argument("--local", metavar="PATH", help="local scratch on each node (config storage_local_path)")
        g.add_argument("--shared", metavar="PATH", help="shared filesystem path (config storage_shared_path)")
        g.add_argument("--params", metavar="SIZE", help="estimate checkpoint time for a model, e.g. 70B")
        g.add_argument("--size", metavar="SIZE", help="fio --size per job, e.g. 1G (config storage_size)")
        g.add_argument("--runtime", type=int, metavar="S", help="fio seconds per test (config storage_runtime)")
        g.add_argument("--prometheus", action="store_true", help="node_exporter textfile metrics (in data.prometheus)")

    async def run(self, ctx: CheckContext, args: argparse.Namespace) -> CheckResult:
        """Raises UsageError for contradictory or bad flags, ParseError for a log that is
        neither a storage job output nor fio JSON."""
        cfg = merged(ctx.config, {key: getattr(args, flag, None) for flag, key in _FLAGS.items()})
        params = parse_params(args.params) if args.params else None
        if args.log:
            if args.nodes or args.reservation:
                raise UsageError("--log judges files: it does not take --nodes/--reservation")
            result = self._judge_logs(cfg, args, params)
        else:
            result = await self._launch(ctx, cfg, args, params)
        return with_prometheus(result, args)

    def _judge_logs(self, cfg: dict, args: argparse.Namespace, params: float | None) -> CheckResult:
        nodes: dict[str, NodeFigures] = {}
        for path in args.log:
            text = read_log(path)
            if "@@preflight" in text:
                nodes.update(figures(text, path))
            else:
                name = args.log_node or Path(path).stem
                nodes[name] = _fio_figures(text, path, name, args.log_path)
        parts = {n: (args.partition,) if args.partition else () for n in nodes}
        return judge(nodes, cfg, parts, params=params, job={"source": "log", "logs": list(args.log)})

    async def _launch(self, ctx: CheckContext, cfg: dict, args: argparse.Namespace,
                      params: float | None) -> CheckResult:
        place = placement(args.nodes, args.partition, args.reservation, args.num_nodes)
        if not place.nodes and args.partition and not args.num_nodes:
            place = placement(",".join(await usable_nodes(ctx, args.partition)), args.partition, args.reservation)
        sp = StorageParams(cfg["storage_local_path"], cfg["storage_shared_path"], cfg["storage_fio"],
                           cfg["storage_size"], int(cfg["storage_runtime"]), cfg["storage_block_size"],
                           int(cfg["storage_iodepth"]), int(cfg["storage_numjobs"]), cfg["storage_ioengine"],
                           bool(cfg["storage_direct"]), int(cfg["storage_meta_files"]))
        output = f"{cfg['output_dir']}/cockpit-storage-%j.out"
        script = build_script(sp, place, output, cfg["time_limit"], bool(cfg["exclusive"]))
        ctx.progress(f"storage on {place.where}: local {sp.local or '-'}, shared {sp.shared or '-'}")
        outcome = await run_job(ctx.jobs, script, output, ctx.progress, where=place.where,
                                output_dir=cfg["output_dir"], poll=float(cfg["poll_interval"]),
                                timeout=float(cfg["job_timeout"]))
        return await self._judge_outcome(ctx, cfg, args, place.nodes, outcome, params)

    async def _judge_outcome(self, ctx: CheckContext, cfg: dict, args: argparse.Namespace, expect: tuple,
                             outcome: JobOutcome, params: float | None) -> CheckResult:
        job: dict[str, Any] = {"source": "job", "job_id": outcome.job_id, "job_state": outcome.state,
                               "output": outcome.output_path}
        try:
            nodes = figures(outcome.output, outcome.output_path)
        except CockpitError as exc:
            return CheckResult("storage", Severity.UNKNOWN,
                               f"job {outcome.job_id} ended {outcome.state}: {exc}", (), job)
        parts = await node_partitions(ctx, nodes, args.partition)
        result = judge(nodes, cfg, parts, expected_nodes=expect, params=params, job=job)
        if outcome.state != "COMPLETED":
            sev = Severity.CRIT if result.severity in (Severity.OK, Severity.WARN) else result.severity
            result = CheckResult(result.check, sev, f"job {outcome.job_id} ended {outcome.state}; {result.summary}",
                                 result.findings, result.data)
        ctx.progress(f"storage on {node_label(nodes)}: {result.severity.name}")
        return result
