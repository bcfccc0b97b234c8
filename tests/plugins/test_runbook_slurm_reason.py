"""The gpu-xid runbook reads what Slurm already says about the node: an Xid named in
its drain reason is evidence (the kernel log may have been cleared by a reboot)."""

from __future__ import annotations

import pytest

from cockpit.backends.demo import DemoBackend
from cockpit_runbooks import load_runbooks
from cockpit_runbooks.context import NotApplicable, RunContext
from cockpit_runbooks.engine import run_runbook
from cockpit_runbooks.probes_node import slurm_reason
from pluginctx import make_ctx

NOW = 1_750_000_000.0


@pytest.fixture
def demo():
    return DemoBackend(clock=lambda: NOW)


async def test_an_xid_in_slurms_reason_is_a_warning_with_who_and_when(demo):
    res = await slurm_reason(RunContext(make_ctx(demo), node=demo.xid_node), {})
    (f,) = res.findings
    assert f.severity.name == "WARN" and f.rule == "slurm.reason_xid"
    assert f"{demo.xid_node}: Slurm's reason names Xid 79" in f.title and "fallen off the bus" in f.title
    assert "by root" in f.detail and res.facts["slurm_reason_xid"] == "79"


async def test_a_node_without_a_reason_is_ok_and_an_unknown_node_unknown(demo):
    idle = next(n.name for n in await demo.fetch_nodes() if not n.reason)
    (f,) = (await slurm_reason(RunContext(make_ctx(demo), node=idle), {})).findings
    assert f.severity.name == "OK" and "no drain or down reason" in f.title
    (g,) = (await slurm_reason(RunContext(make_ctx(demo), node="nosuchnode"), {})).findings
    assert g.severity.name == "UNKNOWN"


async def test_post_mortem_files_make_it_not_applicable(demo, tmp_path):
    log = tmp_path / "kern.log"
    log.write_text("nothing\n")
    with pytest.raises(NotApplicable):
        await slurm_reason(RunContext(make_ctx(demo), node=demo.xid_node, kernel_logs=(str(log),)), {})
    with pytest.raises(NotApplicable):
        await slurm_reason(RunContext(make_ctx(demo)), {})


async def test_the_gpu_xid_runbook_starts_with_slurms_word(demo):
    books, _ = load_runbooks()
    report = await run_runbook(books["gpu-xid"], RunContext(make_ctx(demo), node=demo.xid_node))
    first = report.steps[0]
    assert first.id == "slurm" and first.status == "ran"
    assert any(f.rule == "slurm.reason_xid" for f in report.findings)
