"""sbatch scripts, history regressions, pair bisection (synthetic), the --log check."""

import argparse
import json
import re
import shlex
from pathlib import Path

import pytest

from cockpit.errors import ParseError, ReadOnlyError, UsageError
from cockpit.plugins.api import Severity
from pluginctx import make_ctx
from cockpit_nccl import plugin
from cockpit_nccl.history import History, history_key
from cockpit_nccl.judge import judge
from cockpit_nccl.pairs import PairResult, first_round, name_culprit, second_round
from cockpit_nccl.parser import parse
from cockpit_nccl.sbatch import (JobSpec, NcclTestsSpec, Placement, TorchSpec, env_passthrough,
                                 nccl_tests_script, placement_from, torch_script)

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl-tests"


def directives(script):
    return dict(re.findall(r"^#SBATCH --([\w-]+)(?:=(\S+))?$", script, re.M))


def test_nccl_tests_script_matches_nvidia_and_fixture_launch():
    job = JobSpec(placement_from("node[01-02]"), "/out/%j.out",
                  env=env_passthrough({"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5_0,mlx5_1", "HOME": "/x"}))
    script = nccl_tests_script(job, NcclTestsSpec(gpus_per_node=8, max_bytes="8G", min_bytes="512M"))
    d = directives(script)
    # nebius soperator PR 428 launch line: --nodes=2 --ntasks-per-node=8 --gpus-per-node=8 --mpi=pmix
    fixture = (DATA / "nebius-soperator-pr428-srun-mpi-pmix-2node-H100-header-EXCERPT.txt").read_text()
    for flag in ("--nodes=2", "--ntasks-per-node=8", "--gpus-per-node=8", "--mpi=pmix"):
        assert flag in fixture and flag in script
    assert d["ntasks-per-node"] == d["gpus-per-node"] == "8"  # one task per GPU
    assert d["nodelist"] == "node[01-02]"
    srun = shlex.split(script.strip().splitlines()[-1])
    assert srun[:2] == ["srun", "--mpi=pmix"] and "all_reduce_perf" in srun
    args = srun[srun.index("all_reduce_perf") + 1:]
    flags = dict(zip(args[::2], args[1::2]))
    assert flags["-g"] == "1" and flags["-b"] == "512M" and flags["-e"] == "8G"
    assert {"-f", "-n", "-w", "-c"} <= flags.keys()
    assert "export NCCL_IB_HCA=mlx5_0,mlx5_1" in script and "HOME" not in script


def test_container_image_and_partition_reservation():
    job = JobSpec(Placement((), "gpu", "maint", 4), "/o/%j.out")
    script = nccl_tests_script(job, NcclTestsSpec(container_image="nvcr.io#nvidia/pytorch:24.05-py3"))
    d = directives(script)
    assert (d["nodes"], d["partition"], d["reservation"]) == ("4", "gpu", "maint")
    assert "--container-image=nvcr.io#nvidia/pytorch:24.05-py3" in script


def test_cluster_strings_cannot_inject():
    with pytest.raises(UsageError, match="partition"):
        nccl_tests_script(JobSpec(Placement((), "gpu\n#SBATCH --uid=0"), "/o"), NcclTestsSpec())
    with pytest.raises(UsageError, match="variable name"):
        env_passthrough({}, {"LD_PRELOAD": "/evil.so"})
    script = nccl_tests_script(JobSpec(placement_from("n1"), "/o", env={"NCCL_ALGO": "Ring; rm -rf /"}),
                               NcclTestsSpec())
    assert "export NCCL_ALGO='Ring; rm -rf /'" in script
    with pytest.raises(UsageError, match="no nodes chosen"):
        placement_from(None)


def test_torch_script_rendezvous_from_slurm():
    job = JobSpec(placement_from("node[01-04]"), "/o/%j.out", exclusive=False)
    script = torch_script(job, TorchSpec(python="/venv/bin/python", backend="gloo", tasks_per_node=2,
                                         gpus_per_node=0))
    d = directives(script)
    assert d["ntasks-per-node"] == "2" and "gpus-per-node" not in d and "exclusive" not in d
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST"' in script
    last = shlex.split(script.strip().splitlines()[-1])
    assert last[0] == "srun" and "--mpi=pmix" not in last
    assert last[last.index("--backend") + 1] == "gloo" and last[2].endswith("torch_bench.py")


def test_history_baseline_and_regression(tmp_path):
    hist = History(tmp_path / "h.jsonl")
    key = history_key(["node02", "node01"], "nccl-tests", "all_reduce", 16)
    assert key == "node[01-02]|nccl-tests|all_reduce|16"
    assert hist.baseline(key) is None
    for bw in (480.0, 470.0, 490.0):
        hist.append(key, {"busbw": bw})
    hist.append("other|x|y|2", {"busbw": 1.0})
    (tmp_path / "h.jsonl").open("a").write("{torn line\n")
    assert hist.baseline(key, min_runs=3) == 480.0
    assert hist.baseline(key, min_runs=4) is None
    run = parse((DATA / "aws-2x-p5-h100-efa3200-all_reduce_perf.txt").read_text())
    # The recorded excerpt is the table without its 'Avg bus bandwidth' line: the regression
    # rule passes (487.3 is 102% of 480), but a cut output is never OK.
    v = judge(run, None, baseline=480.0)
    assert [(f.rule, f.severity) for f in v.findings] == [
        ("regression", Severity.OK), ("incomplete", Severity.UNKNOWN)]
    assert v.severity == Severity.UNKNOWN
    v = judge(run, None, baseline=700.0)  # 487 is 70% of this node set's own past
    assert v.severity == Severity.CRIT and any(f.rule == "regression" for f in v.findings)


def test_pairs_first_round_disjoint():
    assert first_round(["a", "b", "c", "d"]) == [("a", "b"), ("c", "d")]
    assert first_round(["a", "b", "c"]) == [("a", "b"), ("c", "a")]
    assert first_round(["a"]) == []


def test_pair_bisection_names_the_node_in_every_slow_pair():
    # Synthetic pair results built here (not recorded): node03 is slow.
    r1 = [PairResult(("node01", "node02"), 40.0), PairResult(("node03", "node04"), 12.0)]
    again = second_round(r1, 0.8)
    assert again == [("node03", "node01"), ("node04", "node02")]
    r2 = r1 + [PairResult(("node03", "node01"), 11.5), PairResult(("node04", "node02"), 39.0)]
    s = name_culprit(r2, 0.8)
    assert s.culprits == ("node03",) and not s.ambiguous
    assert "slow in 2 of 2" in s.evidence[0] and s.summary == "suspect: node03"


def test_pair_bisection_ambiguous_and_fabric_wide():
    r = [PairResult(("a", "b"), 40.0), PairResult(("c", "d"), 10.0)]
    s = name_culprit(r, 0.8)  # c and d were never separated
    assert set(s.culprits) == {"c", "d"} and s.ambiguous
    all_slow = [PairResult(("a", "b"), 10.0), PairResult(("c", "d"), 11.0)]
    s = name_culprit(all_slow, 0.8, expected=40.0)
    assert s.culprits == () and "fabric-wide" in s.summary
    assert name_culprit([PairResult(("a", "b"), 40.0), PairResult(("c", "d"), 39.0)]).culprits == ()
    failed = [PairResult(("a", "b"), 40.0), PairResult(("c", "d"), None), PairResult(("c", "a"), 39.0)]
    assert name_culprit(failed, 0.8).culprits == ("d",)


def test_a_slow_pair_of_nodes_that_are_each_fast_elsewhere_names_the_path_not_the_fabric():
    # Synthetic: c+d slow, but c ran fast with a and d with b: no node is to blame.
    r = [PairResult(("a", "b"), 40.0), PairResult(("c", "d"), 10.0),
         PairResult(("c", "a"), 39.0), PairResult(("d", "b"), 39.5)]
    s = name_culprit(r, 0.8)
    assert s.culprits == ()
    assert "fabric-wide" not in s.summary and "path between them" in s.summary and "c+d: 10.00 GB/s" in s.summary


class _NoSlurm:
    """A Runner that must never be called."""

    description = "no slurm"

    async def run(self, argv, **_kw):
        raise AssertionError(f"ran {argv}")


def _args(check, argv):
    p = argparse.ArgumentParser()
    check.add_arguments(p)
    return p.parse_args(argv)


async def test_check_log_exit_codes_json_and_prometheus(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    check = plugin.checks[0]
    assert check.name == "nccl"
    ctx = make_ctx()
    low = DATA / "nccl-tests-issue232-2node-1xH100-4nic-low-busbw-EXCERPT.txt"
    res = await check.run(ctx, _args(check, ["--log", str(low), "--expected-busbw", "200", "--prometheus"]))
    assert res.exit_code == 2 and res.to_dict()["status"] == "CRIT"
    json.dumps(res.to_dict())
    assert res.data["runs"][0]["busbw_gbps"] == 41.52 and res.data["runs"][0]["nranks"] == 2
    prom = res.data["prometheus"]
    assert 'cockpit_nccl_busbw_gbps{nodes="log",engine="nccl-tests",collective="all_reduce",nranks="2"} 41.52' in prom
    assert "cockpit_nccl_check_status{mode=\"log\"} 2" in prom
    dup = DATA / "nccl-tests-issue182-2node-A100-PCIE-duplicate-header-old-busid-EXCERPT.txt"
    res = await check.run(ctx, _args(check, ["--log", str(dup)]))
    assert res.exit_code == 2 and res.data["runs"][0]["launch_problem"] is True
    assert res.data["runs"][0]["busbw_gbps"] is None
    # Expected busbw from config by partition ('*' for a log).
    ctx2 = make_ctx(config={"expected_busbw": {"*": 191.0}})
    deep = DATA / "deepops-4x-dgx-a100-ib-all_reduce_perf-legacy-error-column.txt"
    assert (await check.run(ctx2, _args(check, ["--log", str(deep)]))).exit_code == 0


async def test_check_bad_input_is_one_clear_error(tmp_path):
    check = plugin.checks[0]
    ctx = make_ctx()
    with pytest.raises(UsageError, match="cannot read --log"):
        await check.run(ctx, _args(check, ["--log", str(tmp_path / "nope")]))
    (tmp_path / "x.log").write_text("not nccl\n")
    with pytest.raises(ParseError, match="x.log"):
        await check.run(ctx, _args(check, ["--log", str(tmp_path / "x.log")]))
    with pytest.raises(UsageError, match="give --log"):
        await check.run(ctx, _args(check, []))
    with pytest.raises(UsageError, match="expected-busbw"):
        await check.run(ctx, _args(check, ["--log", str(tmp_path / "x.log"), "--expected-busbw", "-1"]))
    with pytest.raises(ReadOnlyError):  # the gate refuses the submission itself
        await check.run(make_ctx(runner=_NoSlurm(), read_only=True), _args(check, ["--nodes", "n1"]))
    with pytest.raises(UsageError, match="crit_ratio"):
        await check.run(make_ctx(config={"crit_ratio": 0.95}),
                        _args(check, ["--nodes", "n1"]))


def test_plugin_import_does_not_import_textual():
    import subprocess
    import sys
    code = "import sys, cockpit_nccl, cockpit_nccl.run; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_screen_shows_a_judged_log(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    from textual.app import App
    from textual.widgets import DataTable, Static

    from cockpit_nccl.screen import NcclScreen

    check = plugin.checks[0]
    low = DATA / "nccl-tests-issue232-2node-1xH100-4nic-low-busbw-EXCERPT.txt"
    result = await check.run(make_ctx(),
                             _args(check, ["--log", str(low), "--expected-busbw", "200"]))

    class Host(App):
        def on_mount(self):
            self.push_screen(NcclScreen(make_ctx()))

    async with Host().run_test(size=(120, 40)) as pilot:
        screen = pilot.app.screen
        screen.show_result(result)
        await pilot.pause()
        table = screen.query_one("#results", DataTable)
        assert table.row_count == 1 and table.get_row_at(0)[2] == "CRIT"
        assert "41.52" in table.get_row_at(0)[3]
        assert "CRIT" in str(screen.query_one("#verdict", Static).render())
