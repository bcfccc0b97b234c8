"""Probes about a job: progress, watchdog logs, py-spy stacks, folklore.

Each probe is ``async def probe(rc, args) -> ProbeResult``; ``args`` come from
the step's ``args`` table (defaults from the plugin config). Probes that read
logs use ``--job-log FILE`` when given, so they work on logs copied off a dead
node (post-mortem).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

from cockpit.plugins.api import CockpitError, JobLogError, sanitize

from . import pyspy, watchdog, watchdog_rules
from .context import ProbeResult, RunContext, run_on_node, run_on_slurm_host

_TAIL_BYTES = 4 * 1024 * 1024


async def find_job(rc: RunContext) -> Any:
    """The job of --job from the backend (cached on rc). None when not in the queue."""
    if rc.job is not None or not rc.job_id:
        return rc.job
    j = await rc.ctx.cluster.job(rc.job_id)
    if j is not None:
        rc.job = j
        rc.facts.update(job=str(j.job_id), job_nodes=",".join(j.nodes), job_state=j.state)
    return j


async def _log_paths(rc: RunContext, job: Any) -> tuple[list[str], list[str]]:
    """(paths, why_not): the job's stdout/stderr as Slurm resolves them (a "/dev/null"
    from squeue is checked with scontrol, see ClusterReader.job_output), and why a
    stream has no readable path."""
    paths, why_not = [], []
    for err in (False, True):
        try:
            paths.append(await rc.ctx.cluster.job_output(job, stderr=err))
        except JobLogError as exc:
            why_not.append(str(exc))
        except CockpitError as exc:
            why_not.append(f"cannot ask Slurm for the job's {'stderr' if err else 'stdout'} path: {exc}")
    return list(dict.fromkeys(paths)), list(dict.fromkeys(why_not))


async def _here_or_on_node(rc: RunContext, job: Any, argv: list[str]):
    """Where Slurm's commands run first (a shared filesystem), else on the job's first node."""
    out = await run_on_slurm_host(rc, argv)
    if out.ok or job is None or not job.nodes:
        return out
    return await run_on_node(rc, job.nodes[0], argv)


async def _mtime(rc: RunContext, path: str, job: Any) -> float | None:
    out = await _here_or_on_node(rc, job, ["stat", "-c", "%Y", "--", path])
    return float(out.text.strip()) if out.ok and out.text.strip().isdecimal() else None


async def job_progress(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """Job state, elapsed time and the age of the last line written to its stdout/stderr.

    Judged on the live job's own output files only: a copied --job-log's mtime says
    when it was copied, not when the job last wrote (a post-mortem is n/a here)."""
    res = ProbeResult()
    stale = float(args.get("stale_after_s", rc.config.get("stale_after_s", 600)))
    rc.live("progress (the age of the job's last output line)")
    job = await find_job(rc)
    if job is None:
        res.add("UNKNOWN", "job.unknown", f"job {rc.job_id} is not in the queue", "nothing to judge progress on")
        return res
    now = time.time()
    if job is not None:
        elapsed = int(now - job.start_time) if job.start_time else None
        res.facts.update(elapsed_s=elapsed)
        res.evidence.append(f"job {job.job_id} {job.state} on {','.join(job.nodes) or '-'}, elapsed {elapsed if elapsed is not None else '?'} s")
        if job.state != "RUNNING":
            res.add("WARN", "job.not_running", f"job {job.job_id} is {job.state}, not RUNNING", job.reason)
            return res
    paths, why_not = await _log_paths(rc, job)
    mtimes = [m for m in [await _mtime(rc, p, job) for p in paths] if m is not None]
    if not mtimes:
        res.add("UNKNOWN", "progress.unknown", "no readable stdout/stderr to judge progress",
                "; ".join([", ".join(paths)] * bool(paths) + why_not))
        return res
    age = int(now - max(mtimes))
    res.facts.update(log_age_s=age)
    res.evidence.append(f"last output {age} s ago ({', '.join(paths)})")
    if age > stale:
        res.add("CRIT", "progress.stalled", f"no output for {age} s (threshold {stale:g} s): the job is not progressing",
                evidence=[f"{p}" for p in paths])
    else:
        res.add("OK", "progress.ok", f"last output {age} s ago: progressing")
    return res


async def _read_logs(rc: RunContext, job: Any) -> dict[str, str]:
    """{path: text} of --job-log files, else of the live job's stdout/stderr.

    Raises CockpitError for an unreadable file, NotApplicable with neither."""
    if rc.job_logs:
        out = {}
        for p in rc.job_logs:
            try:
                with open(p, "rb") as fh:
                    out[p] = fh.read().decode("utf-8", "replace")
            except OSError as exc:
                raise CockpitError(f"cannot read --job-log {p}: {exc.strerror or exc}") from None
        return out
    rc.live("the job's output files")
    texts = {}
    for p in (await _log_paths(rc, job))[0] if job else []:
        res = await _here_or_on_node(rc, job, ["tail", "-c", str(_TAIL_BYTES), "--", p])
        if res.ok:
            texts[p] = res.text
    return texts


async def watchdog_logs(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """PyTorch watchdog timeouts, heartbeat-monitor aborts, flight-recorder dump
    signals and NCCL WARN lines per rank; the rank behind.

    A log that holds NCCL/PyTorch fault lines that were not understood is UNKNOWN,
    naming them (unrecognised_nccl.py), never OK."""
    res = ProbeResult()
    job = None if rc.files_only else await find_job(rc)
    texts = await _read_logs(rc, job)
    if not texts:
        res.add("UNKNOWN", "watchdog.nolog", "no job log to scan", "give --job-log FILE for a finished job")
        return res
    log = watchdog.WatchdogLog()
    for path, text in texts.items():
        before = log.recognised
        watchdog.parse(text, log, path)
        res.sources.append(f"{path}: {log.recognised - before} PyTorch/NCCL watchdog line(s) recognised")
    ranks = [log.ranks[r].to_dict() for r in sorted(log.ranks)]
    res.data["ranks"] = ranks
    for r in ranks:
        if r["seq"] is not None or r["last_completed"] is not None:
            res.evidence.append(
                f"rank {r['rank']}: {watchdog_rules.pg_name(r)} SeqNum {r['seq']} {r['op']} NumelIn {r['numel_in']} NumelOut {r['numel_out']} "
                f"Timeout(ms) {r['timeout_ms']} ran for {r['ran_for_ms']} ms, last enqueued {r['last_enqueued']}, last completed {r['last_completed']}")
    watchdog_rules.findings(res, log, ranks, args.get("world"))
    if not res.findings:
        if log.nccl_lines:
            res.add("UNKNOWN", "watchdog.unread",
                    f"{log.nccl_lines} line(s) mention ProcessGroupNCCL or NCCL errors, but none was understood",
                    "an input that was not read is never judged healthy")
        else:
            res.add("OK", "watchdog.none", "no watchdog timeout and no NCCL WARN in the job's logs")
    return res


def _rank_of(environ: str) -> str | None:
    env = dict(kv.split("=", 1) for kv in environ.split("\0") if "=" in kv)
    for key in ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        if env.get(key, "").isdecimal():
            return env[key]
    return None


async def _live_stacks(rc: RunContext, args: Mapping[str, Any], res: ProbeResult,
                       dumps: dict[str, pyspy.Dump], where: dict[str, tuple[str, str]]) -> Any:
    from cockpit.plugins.api import node_processes

    rc.live("py-spy dump of the job's processes")
    job = await find_job(rc)
    if job is None or not rc.ctx.probes.available:
        res.add("UNKNOWN", "stacks.unavailable", "cannot dump stacks: " + ("no live job" if job is None else rc.ctx.probes.why_not))
        return None
    spy = str(args.get("py_spy", rc.config.get("py_spy", "py-spy")))
    match = str(args.get("process_match", rc.config.get("process_match", "python")))
    for node in job.nodes:
        try:
            procs = await node_processes(rc.ctx.probes, node, job.job_id)
        except CockpitError as exc:
            res.add("UNKNOWN", "stacks.failed", f"{node}: cannot list the job's processes", str(exc))
            continue
        for p in procs:
            if p.step in ("batch", "extern") or match not in p.command:
                continue
            dump = await run_on_node(rc, node, [spy, "dump", "--pid", str(p.pid)], timeout=30)
            env = await run_on_node(rc, node, ["cat", f"/proc/{p.pid}/environ"])
            if not dump.ok:
                res.add("UNKNOWN", "stacks.failed", f"{node}: py-spy dump --pid {p.pid} failed", dump.error[:300])
                continue
            rank = _rank_of(env.text) if env.ok else None
            label = f"rank {rank}" if rank is not None else f"pid {p.pid}"
            dumps[label] = pyspy.parse_dump(dump.text)
            where[label] = (node, str(p.pid))
            rc.say(f"py-spy {node} pid {p.pid} ({label}): {pyspy.at(dumps[label].main)}")
    return job


def _file_stacks(rc: RunContext, res: ProbeResult, dumps: dict[str, pyspy.Dump], where: dict[str, tuple[str, str]]) -> None:
    from .probes_node import read_files

    for path, text in read_files(rc.pyspy_files, "--py-spy").items():
        found = pyspy.parse_dumps(text)
        res.sources.append(f"{path}: py-spy dump, {len(found)} process(es)")
        if not found:
            res.add("UNKNOWN", "stacks.unreadable", "a --py-spy file holds no 'Process N:' / 'Thread' dump")
        missing = [pid for pid in pyspy.requested(text) if pid not in {d.pid for d in found}]
        if missing:
            res.add("UNKNOWN", "stacks.missing", f"{path}: py-spy dump was run for pid(s) {', '.join(map(str, missing))} "
                    "but the file holds no dump of them (cut, or the dump failed)")
        for d in found:
            label = pyspy.label(d)
            dumps[label] = d
            where[label] = (rc.node or "-", str(d.pid) if d.pid is not None else "-")


async def pyspy_stacks(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """``py-spy dump`` every rank's process on every node over SSH, or read saved dumps
    (--py-spy FILE); group identical stacks and name the one that stands out."""
    res = ProbeResult()
    dumps: dict[str, pyspy.Dump] = {}
    where: dict[str, tuple[str, str]] = {}
    if rc.pyspy_files:
        _file_stacks(rc, res, dumps, where)
    elif await _live_stacks(rc, args, res, dumps, where) is None:
        return res
    stacks = {k: d.main for k, d in dumps.items()}
    res.data["stacks"] = {k: {"node": where[k][0], "pid": where[k][1], "frames": list(d.main),
                              "threads": [{"tid": t.tid, "state": t.state, "name": t.name, "frames": list(t.frames)}
                                          for t in d.ordered]} for k, d in dumps.items()}
    # the threads that hold the CPU or the GIL lead: a spinning thread can starve the collective
    res.evidence.extend(f"{k}: {a}" for k, d in dumps.items() for a in pyspy.active_threads(d))
    for frames, labels in pyspy.group_stacks(stacks):
        res.evidence.append(f"{len(labels)} x [{', '.join(labels)}]: " + " <- ".join(frames[:6]))
    odd = pyspy.find_odd(stacks)
    if odd:
        nodes = sorted({where[k][0] for k in odd.labels})
        if nodes != ["-"]:
            res.facts.update(straggler_node=nodes[0], straggler_nodes=",".join(nodes))
        res.facts["straggler_rank"] = odd.labels[0].removeprefix("rank ").removeprefix("pid ")
        res.add("CRIT", "stacks.straggler", f"straggler: {', '.join(odd.labels)}" + (f" on {', '.join(nodes)}" if nodes != ["-"] else ""),
                odd.reason, evidence=[f"{k} (pid {where[k][1]}): " + " <- ".join(stacks[k][:6]) for k in odd.labels])
    elif len(stacks) == 1:
        (only, frames), = stacks.items()
        where = pyspy.in_collective(frames) or pyspy.at(frames)
        res.add("UNKNOWN", "stacks.single", f"one process dumped ({only}, at {where}): no other stack to compare it with")
    elif stacks:
        res.add("OK", "stacks.uniform", f"{len(stacks)} process(es) dumped; no stack stands out")
    return res


_LEGACY = {"NCCL_ASYNC_ERROR_HANDLING": "TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_BLOCKING_WAIT": "TORCH_NCCL_BLOCKING_WAIT"}
REAL_VARIABLES = (
    "TORCH_NCCL_ASYNC_ERROR_HANDLING (0 none, 1 abort comm + tear down, 2 abort comm only, 3 tear down; default 3)",
    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC (monitor thread aborts a hung watchdog; 480 s in current PyTorch, 600 s in older)",
    "TORCH_NCCL_TRACE_BUFFER_SIZE (flight recorder ring size; 0 = off) with TORCH_NCCL_DUMP_ON_TIMEOUT=1",
    "NCCL_IB_TIMEOUT (IB ack timeout 4.096 us x 2^value; default 20 since NCCL 2.23; documented range 1-31)",
    "collective timeout: init_process_group(timeout=...) (default 10 min for NCCL); NCCL_TIMEOUT does not exist",
)


async def folklore(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """Flag invented or legacy NCCL/PyTorch variables in the batch script and logs."""
    res = ProbeResult()
    job = None if rc.files_only else await find_job(rc)
    texts = dict(await _read_logs(rc, job)) if (job or rc.job_logs) else {}
    if job is not None and not rc.files_only:
        out = await run_on_slurm_host(rc, ["scontrol", "write", "batch_script", str(job.job_id), "-"])
        if out.ok:
            texts["batch script"] = out.text
    if not texts:
        rc.live("the job's batch script and logs")
        res.add("UNKNOWN", "folklore.nothing", "no batch script or job log could be read to check the variables")
        return res
    for src, text in texts.items():
        if re.search(r"(?<![A-Z_])NCCL_TIMEOUT\b", text):
            res.add("WARN", "folklore.nccl_timeout", f"{src} sets NCCL_TIMEOUT, which is not an NCCL (or PyTorch) variable",
                    fix="set the collective timeout with init_process_group(timeout=timedelta(...))")
        for old, new in _LEGACY.items():
            if re.search(rf"(?<![A-Z_]){old}\b", text):
                res.add("OK", "folklore.legacy", f"{src} uses {old}: PyTorch still reads it as an alias of {new}",
                        fix=f"use {new}")
        for m in re.finditer(r"NCCL_IB_TIMEOUT=(\d+)", text):
            if not 1 <= int(m.group(1)) <= 31:
                res.add("WARN", "folklore.ib_timeout", f"{src}: NCCL_IB_TIMEOUT={m.group(1)} is outside 1-31",
                        "the timeout is 4.096 us x 2^value; newer docs treat 0 or >= 32 as infinite")
    res.add("OK", "folklore.reference", "the variables that really govern NCCL hangs", "; ".join(REAL_VARIABLES))
    return res
