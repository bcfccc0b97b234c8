"""The "accounting" capability of the CLI backend (slurmdbd through sacct and
sacctmgr), and the scheduler's own views that need no database (sprio,
reservations, one job's detail, ``squeue --start``).

The CLI backend declares them as its ``accounting`` and ``scheduling``
capabilities (:class:`SlurmOffers`): ``await caps.accounting.accounting()`` is
None where Slurm has no slurmdbd (``scontrol show config`` says
``AccountingStorageType = accounting_storage/none``; ``accounting_why`` then
says so in one line). Every query says what it cost
(:class:`~cockpit.models.accounting.QueryCost`) and is bounded: sacct always by
a time window (``-S now-Ns -E now-Ms``: relative to the cluster's own clock and
time zone), ``-X`` where steps are not needed, a state filter, and at most one
job id; sacctmgr events by window and node. Times come back as epoch seconds
(``SLURM_TIME_FORMAT=%s``, through ``env`` so it holds over SSH too).

Source choice: ``sacct --json`` where the version has it, else
``--parsable2``. Slurm 22.05's JSON reports exit code 0 for a script that
exited 3, so there the exit codes come from a second, narrow ``--parsable2``
query over the same bounds (its cost is shown too).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any

from cockpit.backends import accounting_json as aj
from cockpit.backends import accounting_text as at
from cockpit.errors import BackendError, CommandFailed
from cockpit.models.accounting import (
    FINISHED_STATES, JobRecord, LimitsState, PriorityFactors, QueryCost, Reservation,
)

NOT_CONFIGURED = "accounting is not configured"
_NO_JSON = ("unrecognized option", "invalid option", "unknown option", "plugin", "serializ", "data_parser")
# The sacct fields of the exit-code cross-check (22.05 JSON): JobID first, State last.
_EXIT_FIELDS = ("JobID", "ExitCode", "DerivedExitCode", "State")


@dataclass(frozen=True, slots=True)
class JobQuery:
    """Which jobs to ask sacct for. ``start``/``end`` are epoch seconds (end None = now)."""

    start: int
    end: int | None = None
    states: tuple[str, ...] = FINISHED_STATES
    users: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    nodes: str = ""  # a hostlist (sacct -N): jobs that ran on these nodes
    steps: bool = False  # False: -X, allocations only
    # True: -D, every run of a requeued or preempted job. Without it a --state query on
    # 24.11+ shows only the job's last record (a never-started CANCELLED one), not the
    # runs that held its GPUs (tests/data/slurm-24.11/site-history).
    every_run: bool = False
    exit_codes: bool = True  # False: not needed (no 22.05 cross-check query)
    # "parsable": --parsable2 even where --json exists. The TUI asks so: decoding 100 MB
    # of JSON is one C call that holds the GIL (keys waited 1.3 s); the line parser yields.
    source: str = "auto"


@dataclass(frozen=True, slots=True)
class Answer:
    """What a query found and what it cost (several queries: several costs)."""

    items: tuple[Any, ...]
    costs: tuple[QueryCost, ...]
    # Records that could not be read, one line each (cockpit.models.unread): the
    # items are every other record, and a command that prints them exits 1.
    warnings: tuple[str, ...] = ()


def _since(epoch_s: float, now: float) -> str:
    # Relative to the cluster's clock: "now-3600seconds" means the same wherever cockpit runs.
    return f"now-{max(0, int(now - epoch_s))}seconds"


def _window(start: int, end: int | None, now: float) -> tuple[list[str], str]:
    argv = ["-S", _since(start, now), "-E", "now" if end is None or end >= now else _since(end, now)]
    span = (end if end is not None else now) - start
    return argv, f"window {_human(span)}"


def _human(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}".replace(".0 ", " ")
    return f"{int(seconds)} s"


class _Commands:
    """Runs one read-only Slurm command and measures it."""

    def __init__(self, runner: Any, bin_dir: str = "", timeout: float = 60.0, clock=time.time) -> None:
        self.runner = runner
        self.bin_dir = bin_dir
        self.timeout = timeout
        self.clock = clock

    def prog(self, name: str) -> str:
        return os.path.join(self.bin_dir, name) if self.bin_dir else name

    async def run(self, argv: list[str], *, epoch_times: bool = True) -> tuple[bytes, float]:
        """(stdout, seconds). Raises CommandFailed (Slurm's words), CommandNotFound, CommandTimeout."""
        full = (["env", "SLURM_TIME_FORMAT=%s"] if epoch_times else []) + argv
        started = time.monotonic()
        res = await self.runner.run(full, timeout=self.timeout)
        took = time.monotonic() - started
        if res.returncode != 0:
            raise CommandFailed(argv, res.returncode, res.err_text())
        return res.stdout, took


# Outputs at least this big are parsed in a thread: 28k jobs are 70 MB of JSON and
# seconds of parsing that the event loop (the TUI's keys) must not wait for.
THREAD_PARSE_BYTES = 1 << 20


async def _off_loop(raw: bytes, parse):
    import asyncio

    return await asyncio.to_thread(parse) if len(raw) >= THREAD_PARSE_BYTES else parse()


def _decode_jobs(raw: bytes, steps: bool, warnings: list[str]):
    doc = aj.load(raw)
    return doc, aj.parse_sacct_json(doc, steps=steps, warnings=warnings)


def _shown(argv: list[str]) -> str:
    return " ".join(os.path.basename(argv[0]) if i == 0 else a for i, a in enumerate(argv))


class SlurmAccounting:
    """sacct, sacctmgr and sshare through the backend's Runner (slurmdbd)."""

    def __init__(self, runner: Any, bin_dir: str = "", timeout: float = 60.0, storage: str = "",
                 tracked_tres: str = "", clock=time.time) -> None:
        self._cmd = _Commands(runner, bin_dir, timeout, clock)
        self.clock = clock
        self.storage = storage  # AccountingStorageType, e.g. accounting_storage/slurmdbd
        self.tracked_tres = tracked_tres  # AccountingStorageTRES: gres/gpuutil there is recorded per step
        self.use_json: bool | None = None  # None: try sacct --json once
        self.source = f"slurmdbd ({storage or 'accounting'})"

    # -- jobs -------------------------------------------------------------------
    def _job_argv(self, q: JobQuery, now: float, out: list[str]) -> tuple[list[str], list[str]]:
        window, span = _window(q.start, q.end, now)
        argv = [self._cmd.prog("sacct"), *out, *window]
        bounds = [span]
        if not q.steps:
            argv.append("-X")
            bounds.append("-X")
        if q.every_run:
            argv.append("-D")
            bounds.append("every run (-D)")
        if q.states:
            argv.append("--state=" + ",".join(q.states))
            bounds.append(f"{len(q.states)} states")
        argv += ["--user=" + ",".join(q.users)] if q.users else ["--allusers"]
        if q.partitions:
            argv.append("--partition=" + ",".join(q.partitions))
        if q.accounts:
            argv.append("--accounts=" + ",".join(q.accounts))
        if q.nodes:
            argv.append("--nodelist=" + q.nodes)
            bounds.append("nodes " + q.nodes)
        return argv, bounds

    async def jobs(self, q: JobQuery) -> Answer:
        """Jobs matching ``q``, oldest first. Raises CommandFailed/ParseError (one line)."""
        now = self.clock()
        if self.use_json is not False and q.source != "parsable":
            try:
                return await self._jobs_json(q, now)
            except CommandFailed as err:
                if not any(h in err.stderr.lower() for h in _NO_JSON):
                    raise
                self.use_json = False
        return await self._jobs_parsable(q, now)

    async def step_usage(self, q: JobQuery) -> Answer:
        """Jobs with their steps' usage (TRESUsageInAve/Max: gres/gpuutil where recorded),
        from ``--parsable2``: much smaller than the JSON of every step."""
        from dataclasses import replace as _replace

        return await self._jobs_parsable(_replace(q, steps=True), self.clock())

    async def _jobs_parsable(self, q: JobQuery, now: float) -> Answer:
        argv, bounds = self._job_argv(q, now, ["--parsable2", "--noheader", "-o", ",".join(at.SACCT_FIELDS)])
        raw, took = await self._cmd.run(argv)
        warns: list[str] = []
        recs = await _off_loop(raw, lambda: at.parse_sacct_parsable(raw.decode("utf-8", "replace"), warnings=warns))
        return Answer(recs, (QueryCost(_shown(argv), took, len(raw), len(recs), tuple(bounds)),), tuple(warns))

    async def _jobs_json(self, q: JobQuery, now: float) -> Answer:
        argv, bounds = self._job_argv(q, now, ["--json"])
        raw, took = await self._cmd.run(argv, epoch_times=False)
        warns: list[str] = []
        doc, recs = await _off_loop(raw, lambda: _decode_jobs(raw, q.steps, warns))
        if q.users:  # 22.05's sacct --json ignores --user (9,456 root jobs for --user=cockpit-user)
            recs = tuple(r for r in recs if r.user in q.users)
        self.use_json = True
        costs = [QueryCost(_shown(argv), took, len(raw), len(recs), tuple(bounds))]
        if recs and q.exit_codes and not aj.exit_codes_trusted(doc):
            recs, cost = await self._fix_exit_codes(q, now, recs)
            costs.append(cost)
        return Answer(recs, tuple(costs), tuple(warns))

    async def _fix_exit_codes(self, q: JobQuery, now: float, recs: tuple[JobRecord, ...]):
        """Exit codes from ``--parsable2`` over the same bounds (22.05's JSON has them wrong)."""
        argv, bounds = self._job_argv(q, now, ["--parsable2", "--noheader", "-o", ",".join(_EXIT_FIELDS)])
        raw, took = await self._cmd.run(argv)
        codes: dict[str, tuple] = {}
        for line in raw.decode("utf-8", "replace").splitlines():
            parts = line.split("|")
            if len(parts) != len(_EXIT_FIELDS) or "." in parts[0]:
                continue
            codes[parts[0]] = (*at.parse_exit(parts[1]), at.parse_exit(parts[2])[0])
        fixed = tuple(replace(r, exit_code=codes[r.job_id][0], exit_signal=codes[r.job_id][1],
                              derived_exit_code=codes[r.job_id][2]) if r.job_id in codes else r for r in recs)
        cost = QueryCost(_shown(argv) + "  (exit codes: 22.05's JSON reports 0)", took, len(raw),
                         len(codes), tuple(bounds))
        return fixed, cost

    async def job(self, job_id: str) -> Answer:
        """One job with its steps (for its efficiency): bounded by the one id (sacct -j
        searches all time for it, by index). An unknown id gives no items."""
        argv = [self._cmd.prog("sacct"), "--parsable2", "--noheader", "-o", ",".join(at.SACCT_FIELDS),
                "--allusers", "--jobs", job_id]
        raw, took = await self._cmd.run(argv)
        warns: list[str] = []
        recs = at.parse_sacct_parsable(raw.decode("utf-8", "replace"), warnings=warns)
        return Answer(recs, (QueryCost(_shown(argv), took, len(raw), len(recs), ("job " + job_id,)),), tuple(warns))

    # -- nodes ------------------------------------------------------------------
    async def node_events(self, nodes: str, start: int, end: int | None = None) -> Answer:
        """Down/drain/reboot events of ``nodes`` (a hostlist; "" = every node) in the
        window, oldest first."""
        now = self.clock()
        argv = [self._cmd.prog("sacctmgr"), "-n", "-P", "show", "event", "event=node"]
        argv += [f"nodes={nodes}"] if nodes else []
        argv.append(f"start={_since(start, now)}")
        if end is not None and end < now:
            argv.append(f"end={_since(end, now)}")
        argv.append("format=" + ",".join(at.EVENT_FIELDS))
        raw, took = await self._cmd.run(argv)
        warns: list[str] = []
        events = tuple(sorted(at.parse_events(raw.decode("utf-8", "replace"), warnings=warns), key=lambda e: e.start))
        span = _human((end or now) - start)
        bounds = (f"window {span}",) + ((f"nodes {nodes}",) if nodes else ())
        return Answer(events, (QueryCost(_shown(argv), took, len(raw), len(events), bounds),), tuple(warns))

    # -- fair share and limits -----------------------------------------------------
    async def shares(self, users: tuple[str, ...] = ()) -> Answer:
        argv = [self._cmd.prog("sshare"), "-n", "-P", "-o", ",".join(at.SSHARE_FIELDS)]
        argv += ["--users=" + ",".join(users)] if users else ["--all"]
        raw, took = await self._cmd.run(argv)
        shares = at.parse_sshare(raw.decode("utf-8", "replace"))
        return Answer(shares, (QueryCost(_shown(argv), took, len(raw), len(shares), ("users " + ",".join(users),) if users else ()),))

    async def limits(self, qos: tuple[str, ...] = (), users: tuple[str, ...] = (),
                     accounts: tuple[str, ...] = ()) -> tuple[LimitsState, tuple[QueryCost, ...]]:
        """The QOS and associations named, with their usage, from slurmctld's cache
        (``scontrol show assoc_mgr``: no database query)."""
        from cockpit.backends.accounting_limits import parse_assoc_mgr

        costs = []
        state = LimitsState()
        asks = []
        if qos:
            asks.append(["flags=qos", "qos=" + ",".join(qos)])
        if users or accounts:
            asks.append(["flags=assoc"] + (["users=" + ",".join(users)] if users else [])
                        + (["accounts=" + ",".join(accounts)] if accounts else []))
        for extra in asks:
            argv = [self._cmd.prog("scontrol"), "show", "assoc_mgr", *extra]
            raw, took = await self._cmd.run(argv)
            part = parse_assoc_mgr(raw.decode("utf-8", "replace"))
            state = LimitsState(qos=state.qos + part.qos, assocs=state.assocs + part.assocs)
            costs.append(QueryCost(_shown(argv), took, len(raw), len(part.qos) + len(part.assocs), ("slurmctld cache",)))
        return state, tuple(costs)


class SlurmScheduling:
    """What the scheduler says about waiting jobs: sprio, reservations, one job."""

    def __init__(self, runner: Any, bin_dir: str = "", timeout: float = 60.0, config: dict | None = None) -> None:
        self._cmd = _Commands(runner, bin_dir, timeout)
        self.config = config or {}

    @property
    def priority_plugin(self) -> str:
        return self.config.get("PriorityType", "")

    async def priority(self, job_ids: tuple[int, ...] = (), partition: str = "") -> Answer:
        """sprio factors for the jobs (or every pending job of a partition). Raises
        BackendError naming the plugin where it is not priority/multifactor."""
        if self.priority_plugin and self.priority_plugin != "priority/multifactor":
            raise BackendError(f"sprio needs priority/multifactor; this cluster runs {self.priority_plugin}")
        argv = [self._cmd.prog("sprio"), "-h", "-o", at.SPRIO_FORMAT]
        if job_ids:
            argv += ["-j", ",".join(str(j) for j in job_ids)]
        if partition:
            argv += ["-p", partition]
        raw, took = await self._cmd.run(argv, epoch_times=False)
        items: tuple[PriorityFactors, ...] = at.parse_sprio(raw.decode("utf-8", "replace"))
        return Answer(items, (QueryCost(_shown(argv), took, len(raw), len(items)),))

    async def weights(self) -> dict[str, float]:
        """The configured priority weights (``PriorityWeightAge`` ... from the config)."""
        out = {}
        for key, value in self.config.items():
            if key.startswith("PriorityWeight") and key != "PriorityWeightTRES":
                try:
                    out[key.removeprefix("PriorityWeight").lower()] = float(value)
                except ValueError:
                    continue
        return out

    async def reservations(self) -> Answer:
        argv = [self._cmd.prog("scontrol"), "show", "reservation"]
        raw, took = await self._cmd.run(argv)
        warns: list[str] = []
        items: tuple[Reservation, ...] = at.parse_reservations(raw.decode("utf-8", "replace"), warnings=warns)
        return Answer(items, (QueryCost(_shown(argv), took, len(raw), len(items)),), tuple(warns))

    async def job_detail(self, job_id: str) -> dict[str, str]:
        """``scontrol show job ID`` as key=value (Dependency, QOS, TresPerNode ...).
        Raises CommandFailed for an unknown id."""
        from cockpit.backends.slurm_text import parse_scontrol_kv

        argv = [self._cmd.prog("scontrol"), "show", "job", str(job_id)]
        raw, _took = await self._cmd.run(argv)
        recs = parse_scontrol_kv(raw.decode("utf-8", "replace"), "scontrol show job")
        return recs[0] if recs else {}

    async def start_estimate(self, job_id: str) -> tuple[int | None, str, QueryCost]:
        """(expected start, scheduled nodes) from ``squeue --start``: the controller runs a
        backfill simulation for it, so this is asked for only on demand."""
        argv = [self._cmd.prog("squeue"), "--start", "-h", "-j", str(job_id), "-o", "%S|%N"]
        raw, took = await self._cmd.run(argv)
        first = raw.decode("utf-8", "replace").strip().splitlines()[:1]
        start, _, nodes = (first[0] if first else "").partition("|")
        when = at.epoch(start, "START_TIME", "squeue --start") if start.strip().isdecimal() else None
        return when, nodes.strip(), QueryCost(_shown(argv), took, len(raw), len(first), ("job " + str(job_id),))


class AccountingUnavailable(BackendError):
    """This cluster (or backend) has no accounting; the message says why, in one line."""


class SlurmOffers:
    """The CLI backend's accounting and scheduling capabilities (its ``AccountingOffer``
    and ``SchedulingOffer``). ``scontrol show config`` is read once per session and
    cached here, on the offer the backend owns: nothing writes onto the backend."""

    def __init__(self, runner: Any, bin_dir: str, timeout: float, name: str) -> None:
        self.runner = runner
        self.bin_dir = bin_dir
        self.timeout = max(timeout, 60.0)
        self.name = name
        self.accounting_why = ""  # why accounting() gave None, in one line
        self._config: dict[str, str] | None = None
        self._accounting: SlurmAccounting | None = None
        self._scheduling: SlurmScheduling | None = None

    async def config(self) -> dict[str, str]:
        """``scontrol show config``, once. Raises CommandFailed/CommandNotFound/CommandTimeout."""
        if self._config is None:
            self._config = await read_config(self.runner, self.bin_dir, self.timeout)
        return self._config

    async def accounting(self) -> SlurmAccounting | None:
        """The accounting reader, or None (``accounting_why`` then says why). Raises
        BackendError when scontrol cannot be asked at all."""
        if self._accounting is not None:
            return self._accounting
        if self.runner is None:
            self.accounting_why = f"{NOT_CONFIGURED}: {self.name} reads recorded outputs, not slurmdbd"
            return None
        config = await self.config()
        self.accounting_why = accounting_why(config)
        if self.accounting_why:
            return None
        self._accounting = SlurmAccounting(self.runner, self.bin_dir, self.timeout,
                                           storage=config.get("AccountingStorageType", ""),
                                           tracked_tres=config.get("AccountingStorageTRES", ""))
        return self._accounting

    async def scheduling(self) -> SlurmScheduling | None:
        """sprio, reservations and one job's detail through the Runner (None without one,
        as for a replay). Raises BackendError like accounting()."""
        if self.runner is None:
            return None
        if self._scheduling is None:
            self._scheduling = SlurmScheduling(self.runner, self.bin_dir, self.timeout, await self.config())
        return self._scheduling


def parse_show_config(text: str) -> dict[str, str]:
    """``scontrol show config`` -> {key: value} (``Key = value`` lines)."""
    out = {}
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq and key.strip() and " " not in key.strip():
            out[key.strip()] = value.strip()
    return out


def accounting_why(config: dict[str, str]) -> str:
    """"" where slurmdbd is configured, else one line saying it is not."""
    storage = config.get("AccountingStorageType", "")
    if storage == "accounting_storage/slurmdbd":
        return ""
    if not storage:
        return f"{NOT_CONFIGURED} (scontrol show config names no AccountingStorageType)"
    return f"{NOT_CONFIGURED} on this cluster (AccountingStorageType = {storage}; history and reports need slurmdbd)"


async def read_config(runner: Any, bin_dir: str = "", timeout: float = 60.0) -> dict[str, str]:
    """``scontrol show config``. Raises CommandFailed/CommandNotFound/CommandTimeout."""
    cmd = _Commands(runner, bin_dir, timeout)
    raw, _took = await cmd.run([cmd.prog("scontrol"), "show", "config"], epoch_times=False)
    return parse_show_config(raw.decode("utf-8", "replace"))


