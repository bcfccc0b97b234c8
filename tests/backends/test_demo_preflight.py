"""The pre-flight checks against the demo, by the same code path as on a cluster: the
job goes through the gate into the demo's simulated sbatch, its output is what the
script would print on the simulated nodes (_demo/preflight.py), and the fabric is
read through the demo's probes. The plugin's own parsers and judges give the
verdicts: the slow RAID0 node named, the thermally throttled node flagged and
drained, the slow-NCCL node's 100 Gb/s rail below the others. The simulated
outputs have the shapes of the real recordings (tests/data/preflight-jobs,
nvidia-smi-load, ib-sysfs, ibstat): their keys are a subset of the recorded ones.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from cockpit.backends.demo import DemoBackend
from cockpit.plugins.api import Severity
from cockpit_preflight import plugin
from cockpit_preflight.burnin_job import burnin_nodes
from cockpit_preflight.common import parse_job_output
from cockpit_preflight.ibparse import parse_ibstat, read_sysfs_tree
from cockpit_preflight.storage_job import figures
from pluginctx import make_ctx

DATA = Path(__file__).resolve().parents[1] / "data"
T0 = 1_760_000_000.0
FAST = {"poll_interval": 0.01}  # the demo's jobs end at the second look
CHECKS = {c.name: c for c in plugin.checks}


@pytest.fixture
def demo():
    return DemoBackend(clock=lambda: T0)


async def check(backend, name: str, argv: list[str], config: dict | None = None, **kw):
    parser = argparse.ArgumentParser()
    CHECKS[name].add_arguments(parser)
    return await CHECKS[name].run(make_ctx(backend, {**FAST, **(config or {})}, **kw), parser.parse_args(argv))


async def output(backend, result) -> str:
    out = await backend.probe_runner(None).on_slurm_host(["cat", "--", result.data["output"]])
    assert out.ok, out.error
    return out.text


def test_the_scenario_names_its_preflight_nodes(demo):
    assert (demo.slow_storage_node, demo.throttled_node, demo.slow_nccl_node) == ("dgx003", "dgx002", "dgx051")
    small = DemoBackend(nodes=32, clock=lambda: T0)
    assert len({small.slow_storage_node, small.throttled_node, small.xid_node, small.down_node}) == 4


# ---------------------------------------------------------------- storage


async def test_storage_names_the_slow_raid0_node_and_reads_lustre(demo):
    res = await check(demo, "storage", ["--nodes", "dgx[001-004]", "--shared", "/lustre/ckpt", "--params", "70B"])
    assert res.severity == Severity.CRIT and res.data["slow_nodes"] == [demo.slow_storage_node]
    assert res.data["job_state"] == "COMPLETED" and "slow node: dgx003" in res.summary
    slow = [f for f in res.findings if f.rule == "storage-slow-node"]
    assert {f.title.split()[0] for f in slow} == {"dgx003"} and len(slow) == 3  # read, write, random read
    for name, node in res.data["nodes"].items():
        local, shared = node["paths"]["local"], node["paths"]["shared"]
        assert (local["fstype"], local["source"], local["target"]) == ("xfs", "/dev/md0", "/raid")
        assert (local["raid_level"], local["raid_disks"]) == ("raid0", 8)
        assert (shared["fstype"], shared["source"]) == ("lustre", "10.0.0.1@o2ib:/fs")
        assert set(shared["meta_ops_per_s"]) == {"create", "stat", "unlink"} and not local["problems"]
        read = local["seqread_bytes_per_s"]
        assert (read < 0.4 * 40e9) if name == "dgx003" else (read > 32e9)  # the guide's 32 GB/s
    assert not [f for f in res.findings if f.rule.startswith("storage-") and "filesystem" in f.rule]
    ck = res.data["checkpoint"]
    assert ck["bytes"] == 70e9 * 14 and 0 < ck["local_seconds"] < ck["shared_seconds"]
    text = await output(demo, res)
    assert text.startswith("# SIMULATED by cockpit --demo: storage job")
    assert "nvme5n1" in text  # the slow member, busy all the time in disk_util


async def test_storage_defaults_measure_local_tmp_only(demo):
    res = await check(demo, "storage", ["--nodes", "dgx[001-004]"])
    assert res.data["slow_nodes"] == ["dgx003"]
    assert all(set(n["paths"]) == {"local"} for n in res.data["nodes"].values())  # no shared path by default


async def test_storage_other_paths_nfs_the_os_mirror_and_no_fio(demo):
    res = await check(demo, "storage", ["--nodes", "dgx[005-006]", "--local", "/var/tmp", "--shared", "/home/op/ckpt"])
    rules = {f.rule for f in res.findings}
    assert {"storage-nfs-checkpoints", "storage-local-filesystem", "storage-expectation"} <= rules
    assert res.data["nodes"]["dgx005"]["paths"]["local"]["raid_level"] == "raid1" and not res.data["slow_nodes"]
    dd = await check(demo, "storage", ["--nodes", "dgx[005-006]", "--shared", "/lustre/x"],
                     {"storage_fio": "/opt/fio/bin/fio"})
    assert {n["tool"] for n in dd.data["nodes"].values()} == {"dd"}
    assert "storage-fio-missing" in {f.rule for f in dd.findings}
    shared = dd.data["nodes"]["dgx005"]["paths"]["shared"]
    assert shared["seqwrite_bytes_per_s"] > 1e9 and shared["meta_ops_per_s"]["create"] > 1000


def _fio_docs(text: str) -> dict[tuple[str, str], dict]:
    node = next(iter(parse_job_output(text, "storage", "x").values()))
    return {(s.attrs["path"], s.attrs["test"]): json.loads(s.text) for s in node.sections if s.kind == "fio"}


def _keys(doc: dict) -> set[str]:
    return {k for k in doc} | {f"{k}.{sub}" for k, v in doc.items() if isinstance(v, dict) for sub in v}


async def test_storage_fio_documents_have_the_recorded_fio_333_layout(demo):
    res = await check(demo, "storage", ["--nodes", "dgx001", "--shared", "/lustre/ckpt"])
    mine = _fio_docs(await output(demo, res))
    real = _fio_docs((DATA / "preflight-jobs" / "storage-fio-node01-02-loop-ext4.out").read_text())
    assert set(mine) == set(real)  # the same tests, path by path
    for key, doc in mine.items():
        want = real[key]
        assert set(doc) - {"disk_util"} == set(want) - {"disk_util"}, key
        job, rjob = doc["jobs"][0], want["jobs"][0]
        assert _keys(job) == _keys(rjob), key
        assert set(job["job options"]) == set(rjob["job options"]), key
        assert doc.get("global options") == want.get("global options"), key  # the metadata engines
        for side in ("read", "write", "trim"):
            assert _keys(job[side]) == _keys(rjob[side]), (key, side)
    md0 = mine[("local", "seqread")]["disk_util"]
    assert md0[0]["name"] == "md0" and "aggr_util" in md0[0] and len(md0) == 9  # md0 and its 8 NVMe
    assert "disk_util" not in mine[("shared", "seqread")]  # lustre has no local disk


# ---------------------------------------------------------------- burnin


async def test_burnin_flags_the_throttled_node_and_drains_it_through_the_gate(demo):
    res = await check(demo, "burnin", ["--nodes", "dgx[001-004]", "--drain"])
    assert res.severity == Severity.CRIT and res.data["failing_nodes"] == [demo.throttled_node]
    hot = [f for f in res.findings if f.rule == "burnin-throttled"]
    assert [f.title.split("): ")[0] for f in hot] == ["dgx002 gpu5 (00000000:C3:00.0", "dgx002 gpu6 (00000000:D1:00.0"]
    assert "hw_thermal_slowdown" in hot[0].title and "temperature 88 C" in hot[0].evidence[0]
    assert {f.rule for f in res.findings if f.severity == Severity.CRIT} == {"burnin-throttled", "burnin-slow-gpu"}
    assert not [f for f in res.findings if f.severity != Severity.OK and not f.title.startswith("dgx002")]
    (plan,) = res.data["proposed_drains"]
    reason = plan["params"]["reason"]
    assert plan["targets"] == ["dgx002"] and reason.startswith("preflight-burnin throttled: gpu5 ")
    assert reason.endswith(f"job={res.data['job_id']}") and len(reason) <= 200
    (done,) = res.data["drains"]
    assert done["ok"] and done["results"][0]["argv"][:4] == ["scontrol", "update", "NodeName=dgx002", "State=DRAIN"]
    node = next(n for n in await demo.fetch_nodes() if n.name == "dgx002")
    assert "drain" in node.flags and node.reason == reason
    samples = res.data["nodes"]["dgx002"]["samples"]
    assert [s["phase"] for s in samples] == ["before"] + ["load"] * 59 + ["after"]
    assert samples[-2]["t"] - samples[1]["t"] == 290  # every 5 s of the 300 s load
    gpu5 = [s["gpus"][5] for s in samples[1:-1]]
    assert gpu5[0]["temp_c"] < 60 and max(g["temp_c"] for g in gpu5) < 91 and gpu5[-1]["sm_mhz"] < 1200
    text = await output(demo, res)
    assert text.startswith("# SIMULATED by cockpit --demo: burnin job") and "SIMULATED load" in text


async def test_a_burnin_shorter_than_the_warm_up_misses_the_fan(demo):
    res = await check(demo, "burnin", ["--nodes", "dgx[001-002]", "--duration", "30"])
    assert res.severity == Severity.OK and not res.data.get("proposed_drains"), [f.title for f in res.findings]


async def test_burnin_engines_the_demo_nodes_lack(demo):
    res = await check(demo, "burnin", ["--nodes", "dgx001", "--engine", "dcgmi", "--duration", "20"])
    assert res.severity == Severity.UNKNOWN  # no DCGM on the demo's nodes: not judged, never OK
    assert any("dcgmi: command not found" in f.title for f in res.findings)


def _paths(text: str) -> set[tuple[str, ...]]:
    """Key paths of an nvidia-smi -q text (the GPU line and the header left out)."""
    out, stack = set(), []
    for raw in text.splitlines():
        if not raw.strip() or raw.startswith(("GPU ", "=")) or raw.strip() == "":
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        key = raw.split(":", 1)[0].strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        out.add(tuple(k for _, k in stack) + (key,))
        stack.append((indent, key))
    return out


async def test_burnin_smi_samples_have_the_recorded_h100_layout(demo):
    res = await check(demo, "burnin", ["--nodes", "dgx002", "--duration", "60"])
    node = next(iter(parse_job_output(await output(demo, res), "burnin", "x").values()))
    sample = node.find("smi", phase="load")[-1].text
    real = (DATA / "nvidia-smi-load" / "q-h100-80gb-hbm3-under-gpu-burn-590.48.01.txt").read_text()
    assert _paths(sample) <= _paths(real), sorted(_paths(sample) - _paths(real))
    assert sample.count("\nGPU 00000000:") == 8 and "Driver Version" in sample
    nb = burnin_nodes(await output(demo, res), "x")["dgx002"]
    assert [d["device"] for d in nb.load_lines if d.get("final")] == [f"cuda:{i}" for i in range(8)]


# ---------------------------------------------------------------- fabric


async def test_fabric_names_the_slow_nccl_node_below_the_others(demo):
    res = await check(demo, "fabric", ["--partition", "debug"])
    assert res.severity == Severity.CRIT and res.data["probes"] == "demo (simulated nodes)"
    assert res.summary == ("debug: 128 GPUs on 16 nodes, needs >= 400 Gb/s (800 recommended); links 400/100 Gb/s; "
                           "below the others: dgx051")
    by_rule: dict[str, list[str]] = {}
    for f in res.findings:
        by_rule.setdefault(f.rule, []).append(f.title)
    assert by_rule["fabric-slow-node"] == ["dgx051: links at 100 Gb/s, below the others (400 Gb/s)"]
    assert by_rule["fabric-degraded-rail"] == [
        "dgx051: mlx5_3 port 1 runs at 100 Gb/s, the node's other rails at 400 Gb/s"]
    assert len(by_rule["fabric-table"]) == 16 and "fabric-mixed-gpus" not in by_rule  # 15 below 800, dgx051 below 400
    node = res.data["nodes"]["dgx051"]
    assert (node["source"], node["link"], node["rails"], node["rate_gbps"]) == ("sysfs", "infiniband", 8, 100.0)
    assert [e["iface"] for e in node["ethernet"]] == ["eno1", "eno2"] and node["ethernet"][0]["speed_mbps"] == 10000
    small = await check(demo, "fabric", ["--partition", "interactive"])  # dgx[057-064]: 64 GPUs, all at 400
    assert small.severity == Severity.WARN and "fabric-slow-node" not in {f.rule for f in small.findings}


async def test_fabric_through_ibstat_where_the_tree_is_missing(demo):
    res = await check(demo, "fabric", ["--nodes", "dgx[050-051]", "--gpus", "16", "--ib-root", "/nonexistent"])
    assert {n["source"] for n in res.data["nodes"].values()} == {"ibstat"}
    assert res.data["nodes"]["dgx051"]["rate_gbps"] == 100.0 and "below the others: dgx051" in res.summary
    text = demo.probe_runner(None).answer("dgx051", ["ibstat"]).text()
    real = (DATA / "ibstat" / "gpud-ibstat.47.0.h100.some.down.0.txt").read_text()
    keys = {ln.strip().split(":")[0] for ln in text.splitlines() if ":" in ln}
    assert keys <= {ln.strip().split(":")[0] for ln in real.splitlines() if ":" in ln}
    assert len(parse_ibstat(text)) == 8


def test_fabric_tree_files_are_the_recorded_trees_and_agree_with_the_kernel_dump(demo, tmp_path):
    from cockpit_runbooks import ib

    probes = demo.probe_runner(None)
    root = "/sys/class/infiniband"
    listed = probes.answer("dgx051", ["find", "-L", root, "-mindepth", "2", "-maxdepth", "4", "-type", "f"]).text()
    mine = {p.removeprefix(root + "/").split("/", 1)[1] for p in listed.split()}
    real_root = DATA / "ib-sysfs" / "gpud-h100-8xndr"
    real = {str(p.relative_to(real_root / "mlx5_0")) for p in (real_root / "mlx5_0").rglob("*") if p.is_file()}
    assert mine - {"node_guid"} == real
    dump = probes.answer("dgx051", ["grep", "-H", "-s", ".", *listed.split()]).text()
    for line in dump.splitlines():  # lay the answer out as a tree and read it as a recorded one
        path, _, value = line.partition(":")
        f = tmp_path / path.removeprefix(root + "/")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(value + "\n")
    rates = {h: p.rate_gbps for h, hca in read_sysfs_tree(tmp_path).items() for p in hca.ports.values()}
    kernel = {p.device: p.rate_gbps for p in ib.parse_dump(probes.answer("dgx051", list(ib.DUMP_ARGV)).text())}
    assert rates == kernel and sorted(set(rates.values())) == [100.0, 400.0]
    net = "/sys/class/net"
    missing = probes.answer("dgx051", ["grep", "-H", "-s", ".", f"{net}/eno2/speed", f"{net}/eno1/speed"])
    assert missing.returncode == 2 and missing.text() == "/sys/class/net/eno1/speed:10000\n"
    assert probes.answer("", ["find", "-L", root]).returncode == 127  # the Slurm host has no HCAs to list


async def test_the_same_submission_prints_the_same_output():
    texts = []
    for _ in range(2):
        b = DemoBackend(clock=lambda: T0)
        res = await check(b, "storage", ["--nodes", "dgx[001-002]", "--shared", "/lustre/ckpt"])
        texts.append(await output(b, res))
    assert texts[0] == texts[1]
    assert figures(texts[0], "x").keys() == {"dgx001", "dgx002"}


# ---------------------------------------------------------------- the TUI


async def _until(pilot, cond, what: str, tries: int = 200):
    for _ in range(tries):
        value = cond()
        if value:
            return value
        await pilot.pause(0.05)
    raise AssertionError(f"{what} never happened")


@pytest.mark.slow
async def test_the_demo_app_opens_the_preflight_screens_from_the_palette_and_runs_them(tmp_path):
    from cockpit.config import Config, General, Refresh, Tui
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.screens.actions import ConfirmAction

    clock = lambda: T0  # noqa: E731
    config = Config(general=General(audit_log=str(tmp_path / "audit.jsonl")), plugins={"preflight": dict(FAST)},
                    refresh=Refresh(nodes=5, jobs=5, partitions=5, topology=5), tui=Tui(telemetry=False))
    app = CockpitApp(DemoBackend(clock=clock), config, clock=clock)

    async def open_screen(pilot, title: str, name: str):
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*title)
        await pilot.pause(0.3)
        await pilot.press("enter")
        screen = await _until(pilot, lambda: type(app.screen).__name__ == name and app.screen, f"the {name}")
        await pilot.pause(0.1)  # composed and mounted
        assert screen.context.simulated
        return screen

    async def run(pilot, screen, confirm: bool, **fields):
        for name, value in fields.items():
            screen.query_one(f"#pf-{name}").value = value
        screen.action_start()
        if confirm:  # a launch asks through the gate's dialog
            dialog = await _until(pilot, lambda: isinstance(app.screen, ConfirmAction) and app.screen, "the dialog")
            assert "sbatch" in str(dialog.plan.to_dict())
            await pilot.press("y")
        await _until(pilot, lambda: screen.result, "the result", tries=400)
        return screen.result, str(screen.query_one("#pf-verdict").render())

    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.2)
        fabric = await open_screen(pilot, "Pre-flight: fabric audit", "FabricScreen")
        result, verdict = await run(pilot, fabric, False, partition="debug")
        assert result.severity == Severity.CRIT and "below the others: dgx051" in verdict
        await pilot.press("escape")
        storage = await open_screen(pilot, "Pre-flight: storage", "StorageScreen")
        result, verdict = await run(pilot, storage, True, nodes="dgx[001-004]", shared="/lustre/ckpt")
        assert result.data["slow_nodes"] == ["dgx003"] and "slow node: dgx003" in verdict
        assert storage.query_one("#pf-results").row_count == 8  # local and shared per node
        await pilot.press("escape")
        burnin = await open_screen(pilot, "Pre-flight: burn-in", "BurninScreen")
        result, verdict = await run(pilot, burnin, True, nodes="dgx[001-002]", duration="120")
        assert "1 node(s) failing: dgx002" in verdict and not burnin.query_one("#pf-drain").disabled
