"""One place that names the readers of saved Slurm text and the scheduler's
judge, for the plugin facade (cockpit.plugins.api) and the TUI.

``read_sched_stats(text) -> SchedStats`` takes ``sdiag`` text, ``sdiag --json``
or Slurm 25.11+'s OpenMetrics ``/metrics/scheduler``; raises ParseError naming
the form it took the text for.
"""

from __future__ import annotations

from cockpit.backends.slurm_logscan import LogEvent, LogScan, scan_log
from cockpit.backends.slurm_sdiag import (
    METRICS_INDEX,
    SchedStats,
    parse_metrics_scheduler,
    parse_sdiag_json,
    parse_sdiag_text,
    stats_from_json,
)
from cockpit.backends.slurm_textcap import Capture, read_capture
from cockpit.core.schedhealth import Judged as SchedJudged
from cockpit.core.schedhealth import headline, judge, pending_by_reason

judge_scheduler = judge


def read_sched_stats(text: str) -> SchedStats:
    s = text.lstrip()
    if s.startswith("{"):
        return parse_sdiag_json(text)
    if s.startswith(("# HELP", "# TYPE", "slurm_", METRICS_INDEX)):
        return parse_metrics_scheduler(text)
    return parse_sdiag_text(text)


__all__ = ["METRICS_INDEX", "Capture", "LogEvent", "LogScan", "SchedJudged", "SchedStats", "headline",
           "judge_scheduler", "pending_by_reason", "read_capture", "read_sched_stats", "scan_log", "stats_from_json"]
