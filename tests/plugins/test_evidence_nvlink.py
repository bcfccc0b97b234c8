"""The NVLink probe on `nvidia-smi nvlink --status` as machines print it
(tests/data/nvlink/SOURCES.md): from files, and fanned out over a job's nodes
through probes that replay those recordings (NVLink hardware is not here).
Every expected value was read off the recording by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.errors import ParseError
from cockpit.models import Job, JobGpus
from cockpit.models.actions import ProbeOutput
from cockpit.plugins.api import Severity
from pluginctx import make_ctx
from test_layout_inputs import NODES, FakeBackend
from cockpit_runbooks import load_runbooks, nvlink, probes_gpu
from cockpit_runbooks.context import NotApplicable, RunContext
from cockpit_runbooks.engine import run_runbook

DATA = Path(__file__).resolve().parents[1] / "data" / "nvlink"
A100 = "gpud-nvlink-status-8x-a100-sxm4-80gb-12-links-25gbps.txt"
A10 = "gpud-nvlink-status-a10-no-nvlink-empty.txt"
# one GPU each, in MIG mode: "Nvlink queries are not supported for Devices in MIG mode", no link line
MIG = ("nvidia_gpu_exporter-nvlink-s-h100-mig-590.48.01-not-supported.txt",
       "nvidia_gpu_exporter-nvlink-s-h200-mig-590.48.01-not-supported.txt",
       "nvidia_gpu_exporter-nvlink-s-h200-mig-610.43.02-not-supported.txt")  # a later driver, one 3g.71gb MIG device
H100 = "nvidia_gpu_exporter-nvlink-s-h100-590.48.01-18-links-tabs.txt"
V100 = "azhpc-diagnostics-issue73-v100-sxm2-links-3-5-inactive-EXCERPT.txt"
GB200 = "k8s-test-infra-issue371-gb200-53.125-elided-EXCERPT.txt"


def text(name):
    return (DATA / name).read_text()


def test_every_recording_is_covered():
    assert {p.name for p in DATA.iterdir() if p.name != "SOURCES.md"} == {A100, A10, H100, V100, GB200, *MIG}


@pytest.mark.parametrize("name,gpus,links,speed", [
    (A100, 8, 96, 25.0),      # GPU 0-7, Link 0-11, "25 GB/s", 9-space indent
    (H100, 1, 18, 26.562),    # one H100, Link 0-17, "26.562 GB/s", tab + space indent
    (V100, 1, 6, 25.781),     # GPU 3 only (after "...."), links 3 and 5 <inactive>
    (GB200, 2, 20, 53.125),   # GPU 0 with 18 links, GPU 1 with 2 before "..."
])
def test_parse(name, gpus, links, speed):
    rep = nvlink.parse_report(text(name))
    assert len(rep.gpus) == gpus and sum(len(g.links) for g in rep.gpus) == links
    assert nvlink.expected_speed(rep.gpus) == speed


def test_inactive_links_are_a_warn_naming_gpu_and_links():
    problems = nvlink.check(nvlink.parse_report(text(V100)))
    assert [(p.kind, p.severity, p.text) for p in problems] == [
        ("elided", "UNKNOWN", "the text leaves lines out ('...'): the GPUs and links not shown were not checked"),
        ("down", "WARN", "GPU 3 (Tesla V100-SXM2-32GB): 2 of 6 NVLinks inactive (link 3, 5)"),
    ]


def test_a_cut_paste_is_unknown_not_ok():
    problems = nvlink.check(nvlink.parse_report(text(GB200)))
    assert [(p.gpu, p.kind, p.severity) for p in problems] == [(-1, "elided", "UNKNOWN"), (1, "cut", "UNKNOWN")]
    assert "GPU 1 (NVIDIA GB200): 2 link(s) listed of the 18 this GPU has" in problems[1].text


def test_a_single_gpu_cut_short_is_known_by_its_product():
    # the one-GPU H100 capture cut after Link 9: an H100 80GB HBM3 has 18 NVLinks
    cut = "\n".join(text(H100).splitlines()[:11])
    (p,) = nvlink.check(nvlink.parse_report(cut))
    assert (p.kind, p.severity) == ("cut", "UNKNOWN") and "10 link(s) listed of the 18 this GPU has" in p.text


def test_links_below_the_configured_speed_are_degraded():
    # the H100 runs its 18 links at 26.562 GB/s; against a configured 53.125 (NVLink5) all are slow
    (slow,) = nvlink.check(nvlink.parse_report(text(H100)), expected_gbps=53.125)
    assert (slow.kind, slow.severity) == ("slow", "WARN") and slow.text.startswith("GPU 0 (NVIDIA H100 80GB HBM3): 18 link(s) below 53.125 GB/s")
    assert nvlink.check(nvlink.parse_report(text(H100))) == []


def test_empty_output_of_a_gpu_without_nvlink_is_a_clear_error():
    with pytest.raises(ParseError, match="the output is empty"):
        nvlink.parse_report(text(A10))


async def _probe_files(*names, config=None):
    rc = RunContext(make_ctx(config=config or {}), nvlink_files=tuple(str(DATA / n) for n in names))
    return await probes_gpu.nvlink_status(rc, {})


async def test_probe_on_files():
    res = await _probe_files(A100)
    assert [(f.severity, f.title) for f in res.findings] == [(Severity.OK, "96 NVLink(s) up at 25 GB/s")]
    assert res.sources == [f"{DATA / A100}: nvidia-smi nvlink --status, 8 GPU(s), 96 link(s)"]
    with pytest.raises(NotApplicable, match="the file is empty: nothing to judge"):
        await _probe_files(A10)
    res = await _probe_files(H100, config={"nvlink_expected_gbps": 53.125})
    assert [(f.severity, f.rule) for f in res.findings] == [(Severity.WARN, "nvlink.slow")]


class ReplayProbes:
    """Stands in for SSH to nodes with NVLink: each node answers `nvidia-smi nvlink --status`
    with a real recording (tests/data/nvlink); any other command gets no answer."""

    available = True
    description = "replay of recorded nvlink --status (test)"
    why_not = ""

    def __init__(self, by_node):
        self.by_node, self.calls = by_node, []

    async def on_nodes(self, nodes, argv, *, via="auto", timeout=None):
        self.calls.append((tuple(nodes), tuple(argv), via))
        if list(argv) != probes_gpu.NVLINK_ARGV:
            return {n: ProbeOutput(n, False, "", "no recording for this command") for n in nodes}
        return {n: ProbeOutput(n, True, text(self.by_node[n])) for n in nodes}

    async def on_slurm_host(self, argv, *, timeout=None):
        raise AssertionError(f"unexpected {argv}")

    async def run(self, node, argv, *, timeout=None, stdin=None):
        raise AssertionError(f"unexpected {argv}")

    async def close(self):
        return None


async def test_fan_out_over_a_jobs_nodes_names_the_bad_node_and_drains_it():
    job = Job(job_id=42, state="RUNNING", partition="train", nodes=("node01", "node02"), node_count=2,
              gpus=(JobGpus("node01", "h100", 8, tuple(range(8))), JobGpus("node02", "h100", 8, tuple(range(8)))))
    probes = ReplayProbes({"node01": A100, "node02": V100})
    ctx = make_ctx(FakeBackend([job], NODES), probes=probes)
    books, _ = load_runbooks()
    rep = await run_runbook(books["nvlink"], RunContext(ctx, job_id="42"), "propose")
    assert probes.calls[0][0] == ("node01", "node02")  # one fan-out over both nodes
    links = {s.id: s for s in rep.steps}["links"]
    titles = [(f.severity, f.title) for f in links.findings]
    assert (Severity.OK, "node01: 96 NVLink(s) up at 25 GB/s") in titles
    assert (Severity.WARN, "node02: GPU 3 (Tesla V100-SXM2-32GB): 2 of 6 NVLinks inactive (link 3, 5)") in titles
    drain = {s.id: s for s in rep.steps}["drain"]
    assert drain.status == "proposed" and drain.argv[0][2] == "NodeName=node02"
    # the Xid step asked the nodes for their kernel log and got no answer: UNKNOWN, which ranks below the WARN
    xid_step = {s.id: s for s in rep.steps}["xid"]
    assert {(f.severity, f.rule) for f in xid_step.findings} == {(Severity.UNKNOWN, "probe.failed")}
    assert rep.severity == Severity.WARN


@pytest.mark.parametrize("name,product", zip(MIG, ("NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA H200"), strict=True))
async def test_a_gpu_in_mig_mode_is_said_to_hide_its_nvlinks(name, product):
    res = await _probe_files(name)
    assert [(f.severity, f.rule, f.title) for f in res.findings] == [
        (Severity.UNKNOWN, "nvlink.mig", f"GPU 0 ({product}): in MIG mode, NVLink cannot be queried (nvidia-smi: "
                                         "'Nvlink queries are not supported for Devices in MIG mode'): "
                                         "its links were not judged")]
    assert res.sources == [f"{DATA / name}: nvidia-smi nvlink --status, 1 GPU(s), 0 link(s), "
                           "1 GPU(s) in MIG mode (NVLink not queryable)"]
