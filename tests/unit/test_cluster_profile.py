"""The "site" test-cluster profile (tests/cluster/lib-profile.sh), rendered without
starting anything: the default profile's node lines are the alike h100:8 nodes they
were, the site profile's are as sites write them, its gres.conf gives each node the
GPUs and shards its node line says, and cockpit reads those Gres strings.

This renders the configuration only; Slurm itself has not been run on it here (see
lib-profile.sh: it runs beside the default cluster in other-debian's chroot)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from cockpit.backends.slurm_json_gres import gpu_items
from cockpit.backends.slurm_json_nodes import gpu_groups

CLUSTER = Path(__file__).resolve().parents[1] / "cluster"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="tests/cluster/common.sh refuses to be sourced unless root")


def _bash(profile: str, call: str) -> str:
    script = (f'source "{CLUSTER}/common.sh"; source "{CLUSTER}/lib-up.sh"; source "{CLUSTER}/lib-profile.sh"; {call}')
    env = dict(os.environ, COCKPIT_CLUSTER_PROFILE=profile, COCKPIT_CLUSTER_RUN="/run/x",
               COCKPIT_CLUSTER_NET="127.0.40")
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, check=True).stdout


def _gres(line: str) -> str:
    m = re.search(r"\bGres=(\S+)", line)
    return m.group(1) if m else ""


def test_the_default_profile_is_unchanged():
    lines = _bash("default", "node_lines").splitlines()
    assert lines == [f"NodeName=node0{i} NodeAddr=127.0.40.{i} NodeHostname=node0{i} CPUs=16 RealMemory=64000 "
                     "Gres=gpu:h100:8 State=UNKNOWN" for i in range(1, 5)]


def test_the_site_profile_nodes_are_as_sites_write_them():
    lines = {ln.split()[0][9:]: ln for ln in _bash("site", "node_lines").splitlines()}
    assert {n: _gres(ln) for n, ln in lines.items()} == {
        "node01": "gpu:8", "node02": "gpu:a100:4,gpu:1g.10gb:4", "node03": "", "node04": "gpu:h100:4,shard:16"}
    assert "RealMemory=32000" in lines["node03"] and "RealMemory=64000" in lines["node01"]
    # what cockpit makes of them: untyped, two types (a MIG profile name is a type), none, typed
    seen = {n: [(g.type, g.count) for g in gpu_groups(_gres(ln), "", "site")] for n, ln in lines.items()}
    assert seen == {"node01": [(None, 8)], "node02": [("a100", 4), ("1g.10gb", 4)], "node03": [],
                    "node04": [("h100", 4)]}


def test_the_site_gres_conf_gives_each_node_what_its_line_says():
    conf = _bash("site", "site_gres_conf")
    files: dict[tuple[str, str | None], int] = {}
    shards: dict[str, int] = {}
    for ln in conf.splitlines():
        if ln.startswith("#"):
            continue
        kv = dict(w.split("=", 1) for w in ln.split())
        if kv["Name"] == "shard":
            shards[kv["NodeName"]] = int(kv["Count"])
            continue
        lo, hi = re.search(r"\[(\d+)-(\d+)\]$", kv["File"]).groups()
        files[(kv["NodeName"], kv.get("Type"))] = int(hi) - int(lo) + 1
    lines = {ln.split()[0][9:]: _gres(ln) for ln in _bash("site", "node_lines").splitlines()}
    want = {(n, it.type): it.count for n, g in lines.items() for it in gpu_items(g, "site") if it.name == "gpu"}
    assert files == want
    assert shards == {"node04": 16}


def test_the_site_profile_puts_nodes_in_two_partitions_and_preempts_from_urgent():
    lines = _bash("site", "site_partition_lines").splitlines()
    conf = dict(ln.split("=", 1) for ln in lines if not ln.startswith(("#", "PartitionName")))
    assert conf == {"PreemptType": "preempt/partition_prio", "PreemptMode": "REQUEUE"}
    parts = {kv["PartitionName"]: kv for kv in (dict(w.split("=", 1) for w in ln.split())
                                                 for ln in lines if ln.startswith("PartitionName"))}
    assert {p: (kv["Nodes"], int(kv["PriorityTier"])) for p, kv in parts.items()} == {
        "gpu": ("ALL", 1), "debug": ("node[01-03]", 1), "urgent": ("node04", 10)}
    assert parts["gpu"]["Default"] == "YES"
