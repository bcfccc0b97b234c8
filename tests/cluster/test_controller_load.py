"""Controller load: cockpit asks slurmctld at most once per resource kind per refresh interval.

Reads slurmctld's RPC counters (``sdiag``, "Remote Procedure Call statistics by
message type") before and after 30 s of the TUI (headless, Textual's Pilot) on
the real test cluster, with known refresh intervals and every view opened in
turn, job and node details included. The counters are read, never reset, so the
test disturbs nobody.

Which RPC each of cockpit's commands sends was measured on this cluster, Slurm
22.05 and 24.11 (tests/cluster/other-debian), reading sdiag around each command
alone on an idle cluster:

    squeue --all --json       REQUEST_JOB_INFO
    sinfo --json              REQUEST_NODE_INFO + REQUEST_PARTITION_INFO (nodes on 22.05)
    scontrol show node --json REQUEST_NODE_INFO + REQUEST_PARTITION_INFO (nodes on 23.02+;
                              22.05 refuses the flag without asking the controller)
    scontrol show partition   REQUEST_PARTITION_INFO
    scontrol show topology    REQUEST_TOPO_INFO

so REQUEST_PARTITION_INFO is bounded by the node and the partition fetches
together. Besides its polls, cockpit reads ``scontrol show config`` once per
session (whether slurmdbd is configured: REQUEST_BUILD_INFO + REQUEST_PING on
22.05); the wrappers log every command, so the test counts those reads (at most
one) and measures what one costs before it starts. A kind fetched every I
seconds (or less often: the interval adapts upwards, never downwards) fetches
at most 1 + T // I times in T seconds, the first fetch at start included.

sdiag counts per message type for all clients together, and other tests may use
the shared cluster at the same time (in CI they run one at a time). So cockpit's
Slurm commands run as the cluster's unprivileged user (wrapper scripts in
``general.slurm_bin_dir`` that ``runuser`` to it; the RPCs are the same as
root's), and sdiag's per-user section gives cockpit's own total exactly. Per
message type, requests by anybody else (all root here) are allowed on top of
cockpit's bound, so the per-type check is exact on a quiet cluster and never
flaky on a busy one.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest

from clusterlib import cancel, run, submit
from cockpit.backends.base import Capabilities

pytestmark = pytest.mark.cluster

DURATION = 30.0
INTERVALS = {"nodes": 1.0, "jobs": 1.0, "partitions": 4.0, "topology": 10.0}
SENDERS = {
    "REQUEST_JOB_INFO": ("jobs",),
    "REQUEST_NODE_INFO": ("nodes",),
    "REQUEST_PARTITION_INFO": ("nodes", "partitions"),
    "REQUEST_TOPO_INFO": ("topology",),
}
_RPC_LINE = re.compile(r"^\s+(\S+)\s+\(\s*\d+\)\s+count:(\d+)")


def parse_sdiag_rpcs(text: str, by: str = "message type") -> dict[str, int]:
    """{message type or user: count} from sdiag's "Remote Procedure Call statistics by BY" section."""
    counts: dict[str, int] = {}
    section = False
    for line in text.splitlines():
        if line.startswith("Remote Procedure Call statistics by") or line.startswith("Pending RPC"):
            section = line.endswith(f"by {by}")
            continue
        m = _RPC_LINE.match(line)
        if section and m:
            counts[m.group(1)] = int(m.group(2))
    return counts


def test_parse_sdiag_on_recorded_output():
    text = (Path(__file__).parents[1] / "data" / "slurm-22.05" / "sdiag.txt").read_text()
    counts = parse_sdiag_rpcs(text)
    assert counts["REQUEST_JOB_INFO"] == 31 and counts["REQUEST_NODE_INFO"] == 68
    assert counts["REQUEST_PARTITION_INFO"] == 239 and counts["REQUEST_TOPO_INFO"] == 5
    assert "root" not in counts  # the per-user section is not read as message types
    assert parse_sdiag_rpcs(text, by="user") == {"root": 885, "cockpit-user": 4}
    assert data_since(text) == "1796001968"


class CountingBackend:
    """The real backend, with each fetch (or stream) per kind counted."""

    def capabilities(self):  # a test double declares what it implements, by type
        return Capabilities.by_type(self, simulated=bool(getattr(self, "simulated", False)))

    def __init__(self, inner) -> None:
        self._inner = inner
        self.fetches: Counter[str] = Counter()

    def __getattr__(self, name: str):
        attr = getattr(self._inner, name)
        prefix = name.partition("_")[0]
        if prefix not in ("fetch", "stream") or not callable(attr):
            return attr
        kind = name.partition("_")[2]

        def counted(*args, **kwargs):
            self.fetches[kind] += 1
            return attr(*args, **kwargs)

        return counted


def data_since(text: str) -> str:
    """sdiag's "Data since" stamp: it changes when slurmctld restarts or someone runs sdiag -r."""
    return next((ln.split("(")[-1].rstrip(")") for ln in text.splitlines() if ln.startswith("Data since")), "")


def _sdiag() -> tuple[dict[str, int], dict[str, int], str]:
    """(RPC counts by message type, by user, data-since stamp) now."""
    text = run(["sdiag"]).stdout
    return parse_sdiag_rpcs(text), parse_sdiag_rpcs(text, by="user"), data_since(text)


def _as_user(bindir: Path, user: str, log: Path) -> None:
    """squeue/sinfo/scontrol in bindir run the real ones as user (same argv, same environment),
    each run logged to log as one line: the command's name and arguments."""
    bindir.mkdir()
    for name in ("squeue", "sinfo", "scontrol"):
        real = shutil.which(name)
        assert real, f"{name} not on PATH"
        (bindir / name).write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\n'
                                   f'exec runuser -u {user} -- "{real}" "$@"\n')
        (bindir / name).chmod(0o755)


def _config_cost(bindir: Path, user: str) -> int:
    """RPCs that one ``scontrol show config`` as user sends (sdiag's per-user count around it)."""
    before = _sdiag()[1].get(user, 0)
    run([str(bindir / "scontrol"), "show", "config"])
    cost = _sdiag()[1].get(user, 0) - before
    assert 1 <= cost <= 4, f"scontrol show config sent {cost} RPCs"
    return cost


def _delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    assert all(v >= 0 for v in delta.values()), f"sdiag counters went backwards: {delta}"
    return delta


async def _drive(pilot, app, duration: float) -> set[str]:
    """Open every view in turn, and a node and a job detail, until duration has passed.

    Returns the names of the views and screens seen."""
    keys = ["1", "2", "enter", "escape", "3", "4", "5", "enter", "escape"]
    seen: set[str] = set()
    deadline = time.monotonic() + duration
    i = 0
    while time.monotonic() < deadline:
        await pilot.press(keys[i % len(keys)])
        i += 1
        await pilot.pause(0.5)
        seen |= {app.current_view(), type(app.screen).__name__}
    return seen


async def _measure(config_path: Path) -> tuple[CountingBackend, set[str], tuple, tuple, float]:
    """Run the TUI headless for DURATION s; returns (backend, views seen, sdiag before, after, seconds)."""
    from cockpit.core.session import open_session
    from cockpit.tui.app import CockpitApp

    session = await open_session(argparse.Namespace(config=str(config_path)))
    backend = CountingBackend(session.backend)
    try:
        before, t0 = _sdiag(), time.monotonic()
        app = CockpitApp(backend, session.config, read_only=True)
        async with app.run_test(size=(160, 48)) as pilot:
            seen = await _drive(pilot, app, DURATION)
        return backend, seen, before, _sdiag(), time.monotonic() - t0
    finally:
        await session.close()


async def test_controller_load_is_one_request_per_kind_per_interval(cluster, tmp_path, monkeypatch):
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("needs root and runuser: cockpit's commands run as the cluster's unprivileged user")
    user = cluster["COCKPIT_TEST_UNPRIV_USER"]
    monkeypatch.setenv("SLURM_CONF", cluster["SLURM_CONF"])
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = tmp_path / "commands.log"
    _as_user(tmp_path / "bin", user, log)
    config_cost = _config_cost(tmp_path / "bin", user)
    log.write_text("")
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[general]\nbackend = "slurm-cli"\nslurm_bin_dir = "{tmp_path / "bin"}"\n\n[refresh]\n'
                   + "".join(f"{k} = {v}\n" for k, v in INTERVALS.items()))
    # A job of ours, so the Jobs view has a row to open even on an idle cluster.
    job_id = submit("sleep 300", job_name=f"cockpit-load-{os.getpid()}", nodes=1, time=5)
    try:
        backend, seen, (before, before_users, since), (after, after_users, since_after), elapsed = await _measure(cfg)
    finally:
        cancel(job_id)
    if since_after != since:
        # Another test restarted slurmctld (tests/tui/test_tmux_e2e.py does) or ran sdiag -r:
        # the counters started again from zero, so this run measured nothing.
        pytest.skip(f"slurmctld's counters were reset during the run (data since {since} -> {since_after})")

    delta, users = _delta(after, before), _delta(after_users, before_users)
    ours, others = users.get(user, 0), sum(v for k, v in users.items() if k != user)
    allowed = {kind: 1 + int(elapsed // interval) for kind, interval in INTERVALS.items()}
    bounds = {rpc: sum(allowed[k] for k in kinds) for rpc, kinds in SENDERS.items()}
    config_reads = log.read_text().splitlines().count("scontrol show config")
    bound = sum(bounds.values()) + config_reads * config_cost
    print(f"\n{elapsed:.1f} s, intervals {INTERVALS}")
    print(f"fetches per kind: {dict(backend.fetches)} (allowed {allowed})")
    print(f"RPCs by cockpit ({user}): {ours} (bound {bound}: polls {sum(bounds.values())}"
          f" + {config_reads} config read(s) x {config_cost}); by everybody else: {others}")
    for rpc in SENDERS:
        print(f"  {rpc:24} {delta.get(rpc, 0):4d} (bound {bounds[rpc]}, all clients)")
    print(f"  other RPC types (all clients): { {k: v for k, v in delta.items() if v and k not in SENDERS} }")
    print(f"views and screens opened: {sorted(seen)}")

    assert {"pulse", "nodes", "gpus", "partitions", "jobs", "NodeDetailScreen", "JobDetailScreen"} <= seen, seen

    for kind in INTERVALS:
        assert 1 <= backend.fetches[kind] <= allowed[kind], (kind, dict(backend.fetches), allowed)
    assert backend.fetches["jobs"] >= 3, dict(backend.fetches)  # it kept polling: not a vacuous pass
    # Our fetches reached the controller (as our user), and cockpit asked nothing more than that.
    assert ours >= sum(backend.fetches.values()), (ours, dict(backend.fetches))
    assert config_reads <= 1, f"scontrol show config read {config_reads} times in one session"
    assert ours <= bound, f"cockpit sent {ours} RPCs in {elapsed:.0f} s > {bound}"
    for rpc, bound in bounds.items():
        assert delta.get(rpc, 0) <= bound + others, f"{rpc}: {delta.get(rpc, 0)} in {elapsed:.0f} s > {bound} + {others}"
