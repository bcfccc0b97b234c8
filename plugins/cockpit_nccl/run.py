"""Run the benchmark in a mode (node, all, pair) and turn the outcome into a CheckResult."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.plugins.api import CockpitError, UsageError
from cockpit.plugins.api import collapse
from cockpit.plugins.api import CheckResult, Finding, Severity, worst

from cockpit_nccl import sbatch
from cockpit_nccl.history import History, default_path, history_key
from cockpit_nccl.judge import Thresholds, Verdict, infer_nranks, judge
from cockpit_nccl.launch import run_job
from cockpit_nccl.pairs import PairResult, Suspicion, first_round, name_culprit, second_round
from cockpit_nccl.parser import NcclRun, parse

MODES = ("node", "all", "pair")
ENGINES = ("nccl-tests", "torch")


@dataclass
class Judged:
    """One benchmark output, parsed and judged."""

    nodes: tuple[str, ...]
    verdict: Verdict
    run: NcclRun | None = None
    job_id: int | None = None
    state: str = ""
    baseline: float | None = None
    key: str = ""

    def to_dict(self) -> dict[str, Any]:
        run = self.run
        return {
            "nodes": collapse(self.nodes), "job_id": self.job_id, "job_state": self.state,
            "status": self.verdict.severity.name, "summary": self.verdict.summary,
            "busbw_gbps": self.verdict.busbw, "size_bytes": self.verdict.size,
            "expected_gbps": self.verdict.expected, "baseline_gbps": self.baseline,
            "launch_problem": self.verdict.launch_problem,
            # the rank count the output states (its "Rank N" lines); the busbw/algbw estimate is
            # a guess and is named so, never shown as the count
            "nranks": run.nranks if run else None,
            "nranks_inferred": infer_nranks(run) if run and run.nranks is None else None,
            "hosts": list(run.hosts) if run else [],
            "collective": (run.collective or "all_reduce") if run else None,
            "engine": run.engine if run else None,
            "avg_busbw_gbps": run.avg_busbw if run else None,
            "rows": [[r.size, r.oop.busbw if r.oop else None, r.ip.busbw if r.ip else None, r.wrong]
                     for r in run.rows] if run else [],
        }


def thresholds(cfg: dict) -> Thresholds:
    return Thresholds(float(cfg["warn_ratio"]), float(cfg["crit_ratio"]), int(cfg["top_sizes"]),
                      int(cfg["plateau_bytes"]))


def history_of(cfg: dict) -> History:
    return History(Path(os.path.expanduser(cfg["history_file"])) if cfg["history_file"] else default_path())


def judge_text(text: str, source: str, cfg: dict, expected: float | None, engine: str | None = None,
               nodes: Sequence[str] = (), record: bool = False) -> Judged:
    """Parse and judge one output; compare with (and optionally add to) the history.

    Raises ParseError when the text is not nccl-tests output.
    """
    run = parse(text, source)
    hosts = tuple(nodes) or run.hosts
    key = history_key(hosts, engine or run.engine, run.collective, infer_nranks(run)) if hosts else ""
    hist = history_of(cfg)
    base = hist.baseline(key, int(cfg["history_window"]), int(cfg["history_min_runs"])) if key else None
    verdict = judge(run, expected, thresholds(cfg), base)
    if record and key and verdict.busbw is not None:
        hist.append(key, {"nodes": collapse(hosts), "engine": engine or run.engine,
                          "collective": run.collective or "all_reduce", "nranks": infer_nranks(run),
                          "busbw": verdict.busbw, "size": verdict.size,
                          "status": verdict.severity.name})
    return Judged(hosts, verdict, run, baseline=base, key=key)


def build_script(cfg: dict, engine: str, place: sbatch.Placement, name: str, output: str) -> str:
    job = sbatch.JobSpec(place, output, name, cfg["time_limit"], bool(cfg["exclusive"]),
                         sbatch.env_passthrough(os.environ, cfg["env"]))
    if engine == "nccl-tests":
        spec = sbatch.NcclTestsSpec(cfg["binary"], cfg["container_image"] or None,
                                    int(cfg["gpus_per_node"]), str(cfg["min_bytes"]),
                                    str(cfg["max_bytes"]), 2, int(cfg["iters"]), int(cfg["warmup"]))
        return sbatch.nccl_tests_script(job, spec)
    gpus = int(cfg["gpus_per_node"]) if cfg["torch_backend"] == "nccl" else 0
    tasks = int(cfg["torch_tasks_per_node"]) or int(cfg["gpus_per_node"]) or 1
    spec = sbatch.TorchSpec(cfg["torch_python"], str(sbatch.TORCH_BENCH), cfg["torch_backend"], tasks,
                            gpus, str(cfg["torch_min_bytes"]), str(cfg["torch_max_bytes"]),
                            int(cfg["iters"]), int(cfg["warmup"]))
    return sbatch.torch_script(job, spec)


@dataclass
class Bench:
    """Runs benchmark jobs for one check invocation."""

    jobs: Any  # cockpit.plugins.api.SlurmJobs
    cfg: dict
    engine: str
    expected: float | None
    progress: Callable[[str], None] = lambda _m: None
    partition: str | None = None
    reservation: str | None = None
    record: bool = True
    judged: list[Judged] = field(default_factory=list)

    async def once(self, nodes: Sequence[str], label: str, num_nodes: int | None = None) -> Judged:
        """One job on ``nodes`` (or num_nodes in the partition); judged and recorded."""
        place = sbatch.Placement(tuple(nodes), self.partition, self.reservation, num_nodes)
        out_dir = self.cfg["output_dir"]
        output = f"{out_dir}/cockpit-nccl-{label}-%j.out"
        script = build_script(self.cfg, self.engine, place, f"cockpit-nccl-{label}", output)
        tag = collapse(nodes) or (f"partition {self.partition}" if self.partition else
                                  f"reservation {self.reservation}" if self.reservation else "?")
        outcome = await run_job(self.jobs, script, output, lambda m: self.progress(f"[{tag}] {m}"),
                                where=tag, output_dir=out_dir, poll=float(self.cfg["poll_interval"]),
                                timeout=float(self.cfg["job_timeout"]))
        if not outcome.output.strip():
            v = Verdict(Severity.UNKNOWN, f"job {outcome.job_id} ended {outcome.state} with no output",
                        None, None, self.expected, False, ())
            res = Judged(tuple(nodes), v)
        else:
            res = await self._judge(outcome, nodes)
        res.job_id, res.state = outcome.job_id, outcome.state
        if outcome.state != "COMPLETED" and res.verdict.severity == Severity.OK:
            res.verdict = Verdict(Severity.CRIT, f"job {outcome.job_id} ended {outcome.state}",
                                  res.verdict.busbw, res.verdict.size, self.expected, False,
                                  res.verdict.findings)
        self.progress(f"[{tag}] {res.verdict.severity.name}: {res.verdict.summary}")
        self.judged.append(res)
        return res

    async def _judge(self, outcome, nodes: Sequence[str]) -> Judged:
        try:
            return judge_text(outcome.output, outcome.output_path, self.cfg, self.expected,
                             self.engine, nodes, self.record and outcome.state == "COMPLETED")
        except CockpitError as exc:
            v = Verdict(Severity.UNKNOWN, f"job {outcome.job_id} {outcome.state}: {exc}", None, None,
                        self.expected, False, ())
            return Judged(tuple(nodes), v)

    async def waves(self, pairs: list[tuple[str, str]], label: str) -> list[Judged]:
        """Run pairs in waves of disjoint pairs (a node is in one job at a time)."""
        limit = int(self.cfg["max_parallel_jobs"]) or len(pairs) or 1
        todo, done = list(pairs), []
        while todo:
            busy: set[str] = set()
            wave = []
            for p in list(todo):
                if len(wave) < limit and not busy & set(p):
                    wave.append(p)
                    busy |= set(p)
                    todo.remove(p)
            done += await asyncio.gather(*(self.once(p, label) for p in wave))
        return done


def pair_results(judged: Sequence[Judged]) -> list[PairResult]:
    return [PairResult(j.nodes, j.verdict.busbw if not j.verdict.launch_problem else None,
                       "" if j.verdict.busbw is not None else j.verdict.summary[:60]) for j in judged]


async def run_pairs(bench: Bench, nodes: Sequence[str]) -> Suspicion:
    """Round 1 disjoint pairs; round 2 re-pairs the slow pairs' nodes with cleared ones."""
    if len(nodes) < 2:
        raise UsageError("pair mode needs at least 2 nodes")
    ratio = float(bench.cfg["pair_slow_ratio"])
    first = await bench.waves(first_round(nodes), "pair")
    again = second_round(pair_results(first), ratio, bench.expected)
    if again:
        bench.progress(f"round 2: {len(again)} pair(s) with cleared nodes")
        await bench.waves(again, "pair")
    return name_culprit(pair_results(bench.judged), ratio, bench.expected)


def result_of(judged: Sequence[Judged], mode: str, engine: str,
              suspicion: Suspicion | None = None) -> CheckResult:
    """The CheckResult for a set of judged runs (and a pair-mode suspicion)."""
    findings: list[Finding] = []
    for j in judged:
        for f in j.verdict.findings:
            findings.append(Finding(f.severity, f"{collapse(j.nodes) or 'log'}: {f.title}", f.rule,
                                    f.detail, f.evidence, f.fix))
    # In pair mode the pairs are judged against each other, so a pair that is UNKNOWN only
    # for lack of an expected figure does not make the whole check UNKNOWN.
    sevs = [Finding(j.verdict.severity, "") for j in judged
            if not (suspicion and j.verdict.severity == Severity.UNKNOWN and j.verdict.busbw)]
    if len(judged) == 1:
        summary = judged[0].verdict.summary
    else:
        bad = [j for j in judged if j.verdict.severity != Severity.OK]
        summary = f"{mode}: {len(judged) - len(bad)} of {len(judged)} runs OK"
    runs = [j.to_dict() for j in judged]
    for j, d in zip(judged, runs):
        if j.run is not None and j.run.collective is None:
            d["collective"] = None  # the log did not name it: not assumed to be all_reduce
    data: dict[str, Any] = {"mode": mode, "engine": engine, "time": int(time.time()), "runs": runs}
    if suspicion is not None:
        data["suspect"] = {"nodes": list(suspicion.culprits), "ambiguous": suspicion.ambiguous,
                           "evidence": list(suspicion.evidence), "reference_gbps": suspicion.reference,
                           "summary": suspicion.summary}
        if suspicion.culprits:
            f = Finding(Severity.WARN if suspicion.ambiguous else Severity.CRIT, suspicion.summary,
                        "pair-bisection", evidence=suspicion.evidence,
                        fix="drain the suspect; check its NICs and cables, GPUs (Xid, ECC) and CPU load")
            findings.insert(0, f)
            sevs.append(f)
        summary = f"{len(judged)} pair runs; {suspicion.summary}"
    sev = worst(sevs) if (sevs or (suspicion and judged)) else Severity.UNKNOWN
    return CheckResult("nccl", sev, summary, tuple(findings), data)
