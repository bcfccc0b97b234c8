"""``cockpit check scheduler``: is slurmctld healthy? ``sdiag`` through the
backend's runner (or Slurm 25.11+'s ``/metrics/scheduler`` with --metrics-url,
or a saved sdiag / sdiag --json / metrics file with --file), judged on server
threads, agent and slurmdbd queues, RPCs per user and type, the backfill cycle
against its interval and its age, and pending jobs by reason. Thresholds:
docs/verdicts.md, "Scheduler health". Exit 0/1/2/3; nothing judged is UNKNOWN."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from cockpit.plugins.api import (
    CheckContext,
    CheckResult,
    CockpitError,
    Finding,
    Severity,
    UsageError,
    judge_scheduler,
    pending_by_reason,
    read_sched_stats,
    verdict,
)


def _finding(j) -> Finding:
    return Finding(Severity[j.severity], j.title, j.code, j.detail)


class SchedulerCheck:
    name = "scheduler"
    description = ("slurmctld health (sdiag or 25.11+ /metrics): server threads, agent and slurmdbd queues, "
                   "RPCs, backfill cycle and age, pending jobs by reason")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--bf-interval", type=int, default=30, metavar="S",
                            help="SchedulerParameters bf_interval of this cluster (default 30 s)")
        parser.add_argument("--metrics-url", metavar="URL",
                            help="read Slurm 25.11+'s OpenMetrics, e.g. http://CTLD:6817/metrics/scheduler, not sdiag")
        parser.add_argument("--file", metavar="FILE",
                            help="judge a saved sdiag, sdiag --json or /metrics/scheduler output instead of the cluster")

    async def _stats(self, ctx: CheckContext, args: argparse.Namespace):
        path = getattr(args, "file", None)
        if not path:
            return await ctx.cluster.scheduler_stats(getattr(args, "metrics_url", None)), "live"
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read(16 << 20)
        except OSError as exc:
            raise UsageError(f"--file: cannot read {path}: {exc.strerror}") from None
        return read_sched_stats(text), path

    async def run(self, ctx: CheckContext, args: argparse.Namespace) -> CheckResult:
        if args.bf_interval <= 0:
            raise UsageError(f"--bf-interval must be a positive number of seconds, not {args.bf_interval}")
        stats, origin = await self._stats(ctx, args)
        findings = [_finding(j) for j in judge_scheduler(stats, bf_interval_s=args.bf_interval)]
        if origin == "live":
            try:
                reasons = [j.reason for j in await ctx.cluster.jobs() if j.state == "PENDING"]
                findings += [_finding(j) for j in pending_by_reason(reasons)]
            except CockpitError as exc:  # the statistics were read: judge them, say what was not
                findings.append(Finding(Severity.UNKNOWN, f"pending jobs not read: {exc}", "sched.pending"))
        sev = verdict(findings)
        bad = [f for f in findings if f.severity in (Severity.CRIT, Severity.WARN)]
        summary = (f"slurmctld {sev.name}: {bad[0].title}" + (f" (+{len(bad) - 1} more)" if len(bad) > 1 else "")
                   if bad else f"slurmctld: {len(findings)} thing(s) judged from {stats.source}, none wrong"
                   if findings else f"nothing could be judged from {stats.source}")
        return CheckResult(self.name, sev, summary, tuple(findings),
                           {"source": stats.source, "origin": origin, "stats": asdict(stats)})
