"""The pre-flight checks against the demo backend, by the same code path as a real
cluster: the job goes through the gate into the demo's simulated sbatch (audited),
is followed to its end and its output read; fabric asks the demo's simulated nodes.
Until the demo writes these checks' outputs (see docs/preflight.md, "What the demo
needs"), the verdict is UNKNOWN with the reason, never OK."""

from __future__ import annotations

import argparse
import asyncio

import pytest

from cockpit.backends.demo import DemoBackend
from cockpit.core.audit import AuditLog, read_audit
from cockpit.plugins.api import Severity
from cockpit_preflight import plugin
from pluginctx import make_ctx

CHECKS = {c.name: c for c in plugin.checks}


def run(tmp_path, name, argv):
    backend = DemoBackend()
    if not callable(getattr(backend, "submit_batch", None)):
        pytest.skip("this demo has no simulated sbatch yet")
    parser = argparse.ArgumentParser()
    CHECKS[name].add_arguments(parser)
    ctx = make_ctx(backend, config={"poll_interval": 0.01, "output_dir": str(tmp_path / "out")},
                   audit=AuditLog(tmp_path / "audit.jsonl"))
    assert ctx.simulated
    return asyncio.run(CHECKS[name].run(ctx, parser.parse_args(argv)))


@pytest.mark.parametrize("name,argv", [
    ("storage", ["--nodes", "dgx[001-002]", "--local", "/scratch", "--shared", "/lustre"]),
    ("burnin", ["--nodes", "dgx[001-002]", "--duration", "60"]),
])
def test_jobs_go_through_the_demos_sbatch(tmp_path, name, argv):
    res = run(tmp_path, name, argv)
    sbatch = [r for r in read_audit(tmp_path / "audit.jsonl") if r["argv"][:1] == ["sbatch"]]
    assert len(sbatch) == 1 and sbatch[0]["result"] == "done" and sbatch[0]["value"].isdecimal()
    assert res.data["job_id"] == int(sbatch[0]["value"]) and res.data["job_state"] == "COMPLETED"
    if not res.data.get("nodes"):
        assert res.severity == Severity.UNKNOWN and f"not a cockpit {name} job output" in res.summary


def test_fabric_asks_the_demos_nodes(tmp_path):
    res = run(tmp_path, "fabric", ["--nodes", "dgx[001-002]", "--gpus", "64"])
    assert sorted(res.data["nodes"]) == ["dgx001", "dgx002"]
    if all(nd["problem"] for nd in res.data["nodes"].values()):
        assert res.severity == Severity.UNKNOWN
        assert all("not simulated" in nd["problem"] for nd in res.data["nodes"].values())
