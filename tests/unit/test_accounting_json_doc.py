"""docs/accounting-json.md documents every field the accounting commands print
with --json (and every --csv column)."""

from __future__ import annotations

import re
from pathlib import Path

from cockpit.commands.report import CSV_FIELDS
from cockpit.core.efficiency import efficiency
from cockpit.core.utilization import compute
from cockpit.models import GpuGroup, Node, Partition
from cockpit.models.accounting import JobRecord, Limit, NodeEvent, PriorityFactors, QueryCost, Reservation, StepRecord
from cockpit.models.accounting_reports import (
    Dependency, FreeBlock, LimitFinding, NodeHistory, ReservationFinding, WhyPending,
)
from cockpit.models.accounting_serialize import (
    efficiency_to_dict, history_to_dict, node_history_to_dict, utilization_to_dict, why_to_dict,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "accounting-json.md"
COST = QueryCost("sacct --json -X", 0.1, 100, 1, ("window 1 d",))
JOB = JobRecord("1", 1, name="x", state="FAILED", exit_code=3, alloc_tres={"cpu": 1, "gres/gpu": 2, "mem": 100},
                start_time=1, end_time=101, elapsed_s=100, nodes=("n1",), node_count=1,
                steps=(StepRecord("batch", elapsed_s=100, total_cpu_s=50.0),))
RES = Reservation("maint", 10, 20, ("n1",), frozenset({"MAINT"}), ("root",))


def _documented() -> set[str]:
    names = set()
    for row in re.findall(r"^\|.*\|$", DOC.read_text(), re.M):
        names.update(re.findall(r"`([a-z_]+)`", row))
    return names


def _keys(obj, out: set[str]) -> set[str]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not (k.isdigit() or "/" in k or k in JOB.alloc_tres):  # data keys: Xids, TRES names
                out.add(k)
            _keys(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _keys(v, out)
    return out


def _outputs() -> list[dict]:
    hist = NodeHistory("n1", 0, 100, (NodeEvent("n1", 1, 2, "DRAIN", "Xid 79", "root"),), (JOB,),
                       "drained 1x", False, {"drain": 1}, {79: 1}, 1, (COST,))
    why = WhyPending(
        "2", "PENDING", "QOSMaxGRESPerUser", "held", "1 node(s)", PriorityFactors(2, "u", "gpu", 10, {"age": 1}),
        0, {"age": 1000}, (LimitFinding("QOS gpu8", "user u", Limit("MaxTRESPU", "gres/gpu", 8, 8), 4, True, "t"),),
        (ReservationFinding(RES, ("n1",), True, "t"),), (Dependency("afterok", "1", "RUNNING", False, "t"),),
        (FreeBlock("leaf switch", "leaf1", ("n1",), 8, 1, True),), 5, "n1", ("note",), (COST,))
    node = Node("n1", "idle", gpus=(GpuGroup("h100", 8),))
    util = compute((JOB,), (), (node,), (Partition("gpu", ("n1",)),), 0, 3600)
    from dataclasses import replace

    util = replace(util, sources={"allocated": "x"}, costs=(COST,))
    return [history_to_dict((JOB,), ["exit 3"], 0, 100, "slurmdbd", (COST,)), node_history_to_dict(hist, ["exit 3"]),
            why_to_dict(why), {"schema_version": 1, "job": {}, "efficiency": efficiency_to_dict(efficiency(JOB)),
                               "steps": [{"step_id": "batch", "name": "", "state": "", "exit_code": 0,
                                          "elapsed_s": 1, "total_cpu_s": 1.0}]},
            utilization_to_dict(util)]


def test_every_printed_field_is_documented():
    keys: set[str] = set()
    for out in _outputs():
        _keys(out, keys)
    keys |= set(CSV_FIELDS)
    missing = keys - _documented()
    assert not missing, f"undocumented in {DOC.name}: {sorted(missing)}"
    assert {"failure", "exit_code", "free_blocks", "idle_in_alloc_gpu_h", "flapping"} <= keys
