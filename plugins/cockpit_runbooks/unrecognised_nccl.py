"""NCCL and PyTorch-distributed fault lines that no parser understood.

A log holding such a line is never called healthy: the probe reports it UNKNOWN
and names the lines (docs/verdicts.md, "Fault lines not understood"). Lines that
only repeat a fault already read (the ``terminate called`` line of the exception
whose ``what():`` was read, the stack frames under it) are consequences, not
unread faults, once something in the same log was understood as a fault.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Words that only a fault line carries (NCCL's own errors, ProcessGroupNCCL's
# watchdog and monitor, c10d's exceptions); INFO chatter and frames never match.
FAULT_RE = re.compile(
    r"NCCL WARN|NCCL error|NCCL Error \d|nccl(?:System|Internal|Remote|UnhandledCuda)Error|ncclInvalid(?:Usage|Argument)"
    r"|unhandled (?:system|cuda) error|remote process exited or there was a network error"
    r"|Watchdog caught|watchdog thread terminated|collective operation timeout|Heartbeat monitor timed out"
    r"|watchdog got stuck|no heartbeat of its watchdog|NCCL communicator was aborted|NCCL timeout"
    r"|Dist(?:Store|Network)Error|detected by watchdog|Timeout at NCCL work",
    re.IGNORECASE,
)
# What a fault prints around itself (the exception's terminate line, c10d's error-level
# lines about dumping debug info): a fault line only when nothing else in the log was
# read as one, otherwise a consequence of the fault that was.
CONTEXT_RE = re.compile(
    r"terminate called after throwing|Some NCCL operations have failed or timed out|To avoid data inconsistency"
    r"|DistBackendError|\[[EF]\d*(?: [\d:.]+)? ProcessGroupNCCL\.cpp:\d+\]")
SHOWN = 5  # lines named in the finding; the count says how many more


def unread(leftover: Iterable[tuple[str, int, str]], fault_read: bool) -> list[tuple[str, int, str]]:
    """(source, line number, text) of every fault line among the lines nothing read
    (``leftover``); context lines count only when nothing in the log was read as a
    fault (``fault_read``)."""
    return [(src, n, line.strip()) for src, n, line in leftover
            if FAULT_RE.search(line) or (not fault_read and CONTEXT_RE.search(line))]


def describe(found: list[tuple[str, int, str]]) -> tuple[str, list[str]]:
    """(title, evidence) for the UNKNOWN finding: how many lines, the first few named."""
    title = f"{len(found)} NCCL/PyTorch distributed fault line(s) not understood: the log is not judged healthy"
    shown = [f"{src + ':' if src else 'line '}{n}: {text[:200]}" for src, n, text in found[:SHOWN]]
    if len(found) > SHOWN:
        shown.append(f"... and {len(found) - SHOWN} more")
    return title, shown
