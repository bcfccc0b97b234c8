"""`job tail` and `job procs` say what the TUI says: a simulated node's file is read
"from the simulated node" (never "over SSH": the demo runs nothing), and a process's
elapsed time is written as the TUI writes it (2d07h, not 198780s)."""

from __future__ import annotations

import json
import re

from cockpit.tui.rows import duration
from tests.unit.test_cli_headless import cockpit


def test_demo_tail_says_where_it_reads():
    proc = cockpit("--demo", "job", "tail", "48213", "-n", "1")
    assert proc.returncode == 0, proc.stderr
    head = proc.stderr.splitlines()[0]
    assert head.endswith("(from the simulated node) <==") and "SSH" not in head


def test_demo_procs_elapsed_is_the_tuis_duration():
    table = cockpit("--demo", "job", "procs", "48213").stdout.splitlines()
    doc = json.loads(cockpit("--demo", "job", "procs", "48213", "--json").stdout)
    first = doc["nodes"]["dgx001"][0]
    row = next(ln for ln in table if ln.split()[:2] == ["dgx001", str(first["pid"])])
    assert row.split()[4] == duration(first["elapsed_s"])
    assert re.fullmatch(r"\d+d\d\dh", row.split()[4])  # days long: the simulated job started 2 days ago
    assert not any(re.fullmatch(r"\d{4,}s", w) for ln in table for w in ln.split())
