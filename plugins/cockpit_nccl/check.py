"""The ``nccl`` check: judge a log, or launch the benchmark through Slurm.

``cockpit check nccl --log FILE [--expected-busbw GBPS]`` judges an existing
output; ``cockpit check nccl --nodes HOSTLIST|--partition P [--engine ...]
[--mode node|all|pair]`` runs it. ``--prometheus`` puts node_exporter textfile
metrics into ``data["prometheus"]`` of the result; the ``cockpit check``
command prints that text instead of the usual output.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cockpit.plugins.api import CheckContext, CheckResult, UsageError, expand

from cockpit_nccl.prometheus import to_prometheus
from cockpit_nccl.run import ENGINES, MODES, Bench, judge_text, result_of, run_pairs
from cockpit_nccl.settings import expected_for, merged

# States in which a node can take a benchmark job.
_USABLE = {"idle", "mixed", "allocated", "completing"}
_UNUSABLE_FLAGS = {"drain", "draining", "down", "not_responding", "maint", "reboot"}


def _env_pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


class NcclCheck:
    name = "nccl"
    description = "NCCL bandwidth (nccl-tests or torch.distributed) through Slurm, judged"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("nccl")
        g.add_argument("--log", metavar="FILE", help="judge an existing nccl-tests output")
        g.add_argument("--expected-busbw", type=float, metavar="GBPS", help="expected busbw (GB/s)")
        g.add_argument("--nodes", metavar="HOSTLIST", help="nodes to test, e.g. node[01-04]")
        g.add_argument("--partition", metavar="P", help="partition to run in (and pick nodes from)")
        g.add_argument("--reservation", metavar="R", help="e.g. a maintenance reservation of drained nodes")
        g.add_argument("--num-nodes", type=int, metavar="N", help="node count with --partition in mode all")
        g.add_argument("--engine", choices=ENGINES, help="benchmark engine (config: engine)")
        g.add_argument("--mode", choices=MODES, default="all",
                       help="node: each node alone; all: one job on all; pair: find the slow node")
        g.add_argument("--gpus-per-node", dest="gpus_per_node", type=int, metavar="N")
        g.add_argument("--torch-backend", dest="torch_backend", choices=("nccl", "gloo"))
        g.add_argument("--tasks-per-node", dest="torch_tasks_per_node", type=int, metavar="N",
                       help="torch engine tasks per node")
        g.add_argument("--min-bytes", dest="min_bytes", metavar="SIZE")
        g.add_argument("--max-bytes", dest="max_bytes", metavar="SIZE")
        g.add_argument("--iters", type=int, metavar="N")
        g.add_argument("--container-image", dest="container_image", metavar="IMAGE")
        g.add_argument("--binary", metavar="PATH", help="nccl-tests binary, e.g. all_gather_perf")
        g.add_argument("--env", dest="env_pairs", action="append", type=_env_pair, default=[],
                       metavar="NAME=VALUE", help="export NCCL_*/GLOO_* in the job (repeatable)")
        g.add_argument("--no-history", action="store_true", help="do not add this run to the history")
        g.add_argument("--record", action="store_true", help="with --log: add the log to the history")
        g.add_argument("--prometheus", action="store_true",
                       help="node_exporter textfile metrics (in data.prometheus)")

    async def run(self, ctx: CheckContext, args: argparse.Namespace) -> CheckResult:
        """Raises UsageError for contradictory flags, ParseError for a log that is not nccl-tests."""
        cfg = merged(ctx.config, args)
        if getattr(args, "env_pairs", None):
            cfg["env"] = {**cfg["env"], **dict(args.env_pairs)}
        if args.engine:
            cfg["engine"] = args.engine
        if cfg["engine"] not in ENGINES:
            raise UsageError(f"bad engine {cfg['engine']!r}: expected one of {', '.join(ENGINES)}")
        if args.log:
            result = self._log(cfg, args)
        else:  # the gate refuses (and audits) a submission in read-only mode
            result = await self._launch(ctx, cfg, args)
        if args.prometheus:
            result = CheckResult(result.check, result.severity, result.summary, result.findings,
                                 {**result.data, "prometheus": to_prometheus(result)})
        return result

    def _log(self, cfg: dict, args: argparse.Namespace) -> CheckResult:
        if args.nodes or args.partition or args.reservation:
            raise UsageError("--log judges a file: it does not take --nodes/--partition/--reservation")
        path = Path(args.log)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"cannot read --log {args.log!r}: {exc.strerror}") from None
        expected = expected_for(cfg, None, False, args.expected_busbw)
        judged = judge_text(text, str(path), cfg, expected, record=args.record)
        return result_of([judged], "log", judged.run.engine if judged.run else "nccl-tests")

    async def _nodes(self, ctx: CheckContext, args: argparse.Namespace) -> tuple[str, ...]:
        if args.nodes:
            return expand(args.nodes)
        if args.mode == "all":
            return ()
        nodes = await ctx.cluster.nodes()
        names = tuple(n.name for n in nodes
                      if (not args.partition or args.partition in n.partitions)
                      and n.state in _USABLE and not (set(n.flags) & _UNUSABLE_FLAGS))
        if not names:
            raise UsageError(f"no usable nodes in partition {args.partition!r}")
        return names

    async def _launch(self, ctx: CheckContext, cfg: dict, args: argparse.Namespace) -> CheckResult:
        if not (args.nodes or args.partition or args.reservation):
            raise UsageError("give --log FILE, or --nodes HOSTLIST / --partition P / --reservation R")
        nodes = await self._nodes(ctx, args)
        if args.mode in ("node", "pair") and not nodes:
            raise UsageError(f"mode {args.mode} needs node names: give --nodes HOSTLIST")
        one = args.mode == "node" or len(nodes) == 1
        bench = Bench(ctx.jobs, cfg, cfg["engine"],
                      expected_for(cfg, args.partition, one, args.expected_busbw), ctx.progress,
                      args.partition, args.reservation, record=not args.no_history)
        if args.mode == "pair":
            suspicion = await run_pairs(bench, nodes)
            return result_of(bench.judged, "pair", cfg["engine"], suspicion)
        if args.mode == "node":
            for node in nodes:  # one at a time: each job holds a whole node
                await bench.once((node,), "node")
        else:
            await bench.once(nodes, "all", None if nodes else (args.num_nodes or 2))
        return result_of(bench.judged, args.mode, cfg["engine"])
