"""slurmctld's statistics -> :class:`SchedStats`, from ``sdiag`` text, ``sdiag
--json`` (or slurmrestd's ``/diag``) and Slurm 25.11+'s OpenMetrics
``/metrics/scheduler``. Pure, no I/O; every parser raises only ParseError.

Recorded forms: tests/data/slurm-22.05|24.11|26.05/sdiag.txt and sdiag-busy.txt (the
test clusters), tests/data/slurm-text/sdiag-* (sites' and an exporter's, 2017 to 26.05),
tests/data/slurm-postmortem/*sdiag*.json, slurmrestd-22.05/diag.json and
slurm-24.11|26.05/sdiag-busy.json (JSON schemas v0.0.38 to v0.0.45), tests/data/slurm-text/
metrics-*.txt (25.11) and slurm-26.05/metrics-*.txt (26.05, with the /metrics index).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from cockpit.errors import ParseError

_RPC_LINE = re.compile(r"^\s*(\S+)\s+\(\s*(\d+)\)\s+count:(\d+)\s+ave_time:(\d+)\s+total_time:(\d+)")
_EPOCH = re.compile(r"\((\d+)\)\s*$")


@dataclass(frozen=True, slots=True)
class SchedStats:
    source: str  # "sdiag", "sdiag --json", "/metrics"
    taken_at: int | None = None  # the controller's clock when the statistics were taken (epoch s)
    server_threads: int | None = None
    agent_queue: int | None = None
    dbd_queue: int | None = None
    jobs_pending: int | None = None
    jobs_running: int | None = None
    sched_cycle_last_us: int | None = None
    sched_cycle_max_us: int | None = None
    bf_cycles: int | None = None  # backfill cycles since the statistics were reset
    bf_cycle_last_us: int | None = None
    bf_cycle_mean_us: int | None = None
    bf_last_when: int | None = None  # epoch s of the last backfill cycle; None: never
    rpc_by_type: tuple[tuple[str, int, int], ...] = ()  # (type, count, average µs)
    rpc_by_user: tuple[tuple[str, int, int], ...] = ()  # (user, count, average µs)


def _int(v: Any) -> int | None:
    if isinstance(v, dict):  # data_parser's {set, infinite, number}
        return int(v["number"]) if v.get("set", True) and "number" in v else None
    if isinstance(v, bool) or v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


# sdiag text: (section, label) -> field; section "" is the top block
_TEXT_KEYS = {
    ("", "Server thread count"): "server_threads", ("", "Agent queue size"): "agent_queue",
    ("", "DBD Agent queue size"): "dbd_queue", ("", "Jobs pending"): "jobs_pending",
    ("", "Jobs running"): "jobs_running",
    ("main", "Last cycle"): "sched_cycle_last_us", ("main", "Max cycle"): "sched_cycle_max_us",
    ("bf", "Total cycles"): "bf_cycles", ("bf", "Last cycle"): "bf_cycle_last_us",
    ("bf", "Mean cycle"): "bf_cycle_mean_us",
}


def parse_sdiag_text(text: str) -> SchedStats:
    """``sdiag`` as printed (Slurm 19.05 to 26.05). Raises ParseError without its thread count line."""
    got: dict[str, Any] = {}
    section, types, users = "", [], []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("Main schedule statistics"):
            section = "main"
        elif s.startswith("Backfilling stats"):
            section = "bf"
        elif s.startswith("Remote Procedure Call statistics by message type"):
            section = "type"
        elif s.startswith("Remote Procedure Call statistics by user"):
            section = "user"
        elif s.startswith("Pending RPC"):
            section = "pending"
        elif s.startswith("sdiag output at"):
            m = _EPOCH.search(s)
            got["taken_at"] = int(m.group(1)) if m else None
        m = _RPC_LINE.match(line)
        if m and section in ("type", "user"):
            (types if section == "type" else users).append((m.group(1), int(m.group(3)), int(m.group(4))))
            continue
        label, colon, value = s.partition(":")
        if not colon:
            continue
        if section == "bf" and label == "Last cycle when":
            m = _EPOCH.search(value)
            got["bf_last_when"] = int(m.group(1)) if m else None
        key = _TEXT_KEYS.get(("" if section not in ("main", "bf") else section, label.strip()))
        if key and key not in got:
            got[key] = _int(value.strip())
    if got.get("server_threads") is None:
        raise ParseError("sdiag", "no 'Server thread count:' line")
    return SchedStats("sdiag", rpc_by_type=tuple(types), rpc_by_user=tuple(users), **got)


def stats_from_json(stats: dict[str, Any]) -> SchedStats:
    """The ``statistics`` object of ``sdiag --json`` / slurmrestd ``/diag``."""
    def rpcs(key: str, name: str) -> tuple[tuple[str, int, int], ...]:
        out = []
        for r in stats.get(key) or ():
            if isinstance(r, dict):
                out.append((str(r.get(name, "?")), _int(r.get("count")) or 0, _int(r.get("average_time")) or 0))
        return tuple(out)

    when = _int(stats.get("bf_when_last_cycle"))
    return SchedStats(
        "sdiag --json", _int(stats.get("req_time")), _int(stats.get("server_thread_count")),
        _int(stats.get("agent_queue_size")), _int(stats.get("dbd_agent_queue_size")),
        _int(stats.get("jobs_pending")), _int(stats.get("jobs_running")),
        _int(stats.get("schedule_cycle_last")), _int(stats.get("schedule_cycle_max")),
        _int(stats.get("bf_cycle_counter")), _int(stats.get("bf_cycle_last")), _int(stats.get("bf_cycle_mean")),
        when or None,  # 0: no backfill cycle yet
        rpcs("rpcs_by_message_type", "message_type"), rpcs("rpcs_by_user", "user"))


def parse_sdiag_json(text: str) -> SchedStats:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ParseError("sdiag --json", str(exc)) from None
    st = doc.get("statistics") if isinstance(doc, dict) else None
    if not isinstance(st, dict):
        raise ParseError("sdiag --json", "no 'statistics' object")
    return stats_from_json(st)


_OM_LINE = re.compile(r"^([A-Za-z_:][\w:]*)(\{[^}]*\})?\s+(\S+)")


def parse_openmetrics(text: str) -> dict[str, float]:
    """``name value`` samples of an OpenMetrics text (labels dropped, first sample wins).
    Raises ParseError for a text with no sample."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _OM_LINE.match(line)
        if not m:
            raise ParseError("OpenMetrics", f"not a sample line: {line[:60]!r}")
        try:
            out.setdefault(m.group(1), float(m.group(3)))
        except ValueError:
            raise ParseError("OpenMetrics", f"value is not a number: {line[:60]!r}") from None
    if not out:
        raise ParseError("OpenMetrics", "no sample")
    return out


# GET /metrics (no endpoint) answers this plain list, not OpenMetrics (recorded: 26.05.5,
# tests/data/slurm-26.05/metrics-index.txt); the docs' "GET /metrics" invites pointing at it.
METRICS_INDEX = "slurmctld index of metrics endpoints"


def parse_metrics_scheduler(text: str) -> SchedStats:
    """The text of ``/metrics/scheduler``. Raises ParseError naming the endpoint to ask for
    when it is slurmctld's index of endpoints or another endpoint, or not OpenMetrics."""
    if text.lstrip().startswith(METRICS_INDEX):
        raise ParseError("/metrics/scheduler", "this is slurmctld's index of its /metrics endpoints "
                         "(GET /metrics); ask for /metrics/scheduler")
    return stats_from_metrics(parse_openmetrics(text))


def stats_from_metrics(m: dict[str, float]) -> SchedStats:
    """Slurm 25.11+ ``/metrics/scheduler`` (metrics/openmetrics plugin names). Raises
    ParseError when it is not that endpoint (no slurm_server_thread_cnt)."""
    if "slurm_server_thread_cnt" not in m:
        seen = sorted({n.split("_")[1] for n in m if n.startswith("slurm_") and n.count("_") >= 1})
        raise ParseError("/metrics/scheduler", "no slurm_server_thread_cnt sample: this looks like another /metrics "
                         f"endpoint (slurm_{'/slurm_'.join(seen[:4])}...); cockpit judges /metrics/scheduler")

    def g(name: str) -> int | None:
        return int(m[name]) if name in m else None

    return SchedStats(
        "/metrics", g("slurm_sched_stats_timestamp"), g("slurm_server_thread_cnt"), g("slurm_agent_queue_size"),
        g("slurm_slurmdbd_queue_size"), g("slurm_sdiag_jobs_pending"), g("slurm_sdiag_jobs_running"),
        g("slurm_schedule_cycle_last"), g("slurm_schedule_cycle_max"), g("slurm_bf_cycle_cnt"),
        g("slurm_bf_cycle_last"), g("slurm_bf_mean_cycle"), g("slurm_bf_when_last_cycle") or None)
