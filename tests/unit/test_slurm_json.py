"""Slurm JSON parsers over real recorded outputs (tests/data/slurm-json/SOURCES.md).

Expected values were read from the files by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cockpit.backends.slurm_json import (
    exit_status,
    job_state,
    parse_scontrol_nodes,
    parse_sinfo,
    parse_squeue,
    parse_version,
)
from cockpit.errors import ParseError

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm-json"


def raw(name: str) -> bytes:
    return (DATA / name).read_bytes()


def jobs_by_id(name: str, warnings=None):
    return {j.job_id: j for j in parse_squeue(raw(name), warnings=warnings)}


def nodes_by_name(nodes):
    return {n.name: n for n in nodes}


def test_every_fixture_parses_without_warnings():
    files = sorted(DATA.glob("*.json"))
    assert len(files) == 10
    for f in files:
        warnings: list[str] = []
        doc = json.loads(f.read_bytes())
        if "jobs" in doc:
            assert parse_squeue(f.read_bytes(), warnings=warnings)
        elif "sinfo" in f.name:
            assert parse_sinfo(f.read_bytes(), warnings=warnings)[0]
        else:
            assert parse_scontrol_nodes(f.read_bytes(), warnings=warnings)
        assert warnings == [], f.name


def test_2108_squeue_running_job():
    jobs = jobs_by_id("slurm-21.08.5_openapi-v0.0.37_squeue--json_rivosinc.json")
    j = jobs[26515966]
    assert (j.state, j.user, j.account, j.partition) == ("RUNNING", "bkd", "account1", "hw-l")
    assert j.nodes == ("cs75",) and j.node_count == 1
    assert (j.submit_time, j.start_time, j.end_time) == (1684114900, 1684114921, 1686633833)
    assert j.time_limit == 30240
    assert j.command == "sleep 100" and j.work_dir == "/somedir/on/nfs"
    assert (j.stdout, j.stderr) == ("/nfs/user/stdout.log", "/nfs/user/stderr.log")
    assert j.reason == ""  # Slurm's "None"
    assert j.array_job_id is None and j.het_job_id is None
    assert (j.exit_code, j.exit_signal) == (0, None)
    assert j.gpus == () and j.gpu_count == 0


def test_2108_squeue_pending_array_master_with_number_objects():
    j = jobs_by_id("slurm-21.08.5_openapi-v0.0.37_squeue--json_rivosinc.json")[58948420]
    assert j.state == "PENDING" and j.reason == "Dependency"
    assert j.nodes == () and j.node_count == 1
    assert j.array_job_id == 58948420
    assert j.array_task_id is None  # {"set": false}: the array master
    assert j.array_task_string == "1-10"
    assert j.display_id == "58948420_[1-10]"
    assert j.start_time is None and j.time_limit == 1439
    assert j.held is False


def test_2311_two_node_job_with_two_gpu_types_per_node():
    j = jobs_by_id("slurm-23.11.10_data_parser-v0.0.40_restd-job-gpus-multi-nodes_slurmweb.json")[793]
    assert j.state == "RUNNING" and j.nodes == ("ia1", "ia2")
    per_node = {(g.node, g.type): (g.count, g.indexes) for g in j.gpus}
    assert per_node == {
        ("ia1", "h100"): (2, (0, 1)), ("ia1", "h200"): (4, (2, 3, 4, 5)),
        ("ia2", "h100"): (2, (0, 1)), ("ia2", "h200"): (4, (2, 3, 4, 5)),
    }
    assert j.gpu_count == 12
    assert j.gpus_per_node == 6  # tres_per_job gres/gpu:12 over 2 nodes
    assert (j.submit_time, j.start_time, j.end_time) == (1747046307, 1747046307, 1747046367)


def test_2311_jobs_states_exit_codes_and_signals():
    jobs = jobs_by_id("slurm-23.11.10_data_parser-v0.0.40_restd-jobs_slurmweb.json")
    assert len(jobs) == 14
    timeout = jobs[776]
    assert (timeout.state, timeout.reason) == ("TIMEOUT", "TimeLimit")
    assert (timeout.exit_code, timeout.exit_signal) == (None, 15)
    failed = jobs[778]
    assert (failed.state, failed.reason, failed.exit_code) == ("FAILED", "NonZeroExitCode", 1)
    assert jobs[777].state == "COMPLETED" and jobs[777].exit_code == 0
    pending = jobs[787]
    assert (pending.state, pending.reason, pending.nodes, pending.node_count) == (
        "PENDING", "Resources", (), 2)
    assert sum(j.state == "RUNNING" for j in jobs.values()) == 5


def test_2411_multi_node_gpu_job():
    j = jobs_by_id("slurm-24.11_data_parser-v0.0.41_restd-job-gpus-multi-nodes_slurmweb.json")[5981]
    assert j.nodes == ("gpu1", "gpu2")
    assert [(g.node, g.type, g.count, g.indexes) for g in j.gpus] == [
        ("gpu1", "h100", 4, (0, 1, 2, 3)), ("gpu2", "h100", 4, (0, 1, 2, 3))]
    assert j.gpu_type == "h100" and j.gpus_per_node == 4 and j.gpu_count == 8


def test_2411_pending_job_has_reason_and_no_nodes():
    j = jobs_by_id("slurm-24.11_data_parser-v0.0.41_restd-job-pending_slurmweb.json")[5977]
    assert (j.state, j.reason, j.user, j.partition) == ("PENDING", "BeginTime", "tnixon", "normal")
    assert j.nodes == () and j.gpus == ()
    assert j.submit_time == 1747751544 and j.start_time == 1747755144  # expected start
    assert j.held is False and j.cpus == 64


def test_2108_sinfo_nodes_shape():
    nodes, parts = parse_sinfo(raw("slurm-21.08.5_openapi-v0.0.37_sinfo--json_rivosinc.json"))
    by = nodes_by_name(nodes)
    assert {n: (x.state, x.flags) for n, x in by.items()} == {
        "cs2.example.company.com": ("mixed", frozenset()),
        "cs3.example.company.com": ("idle", frozenset()),
        "cs4.example.company.com": ("allocated", frozenset()),
        "cs5.example.company.com": ("down", frozenset()),
    }
    cs2 = by["cs2.example.company.com"]
    assert (cs2.cpus, cs2.alloc_cpus, cs2.memory_mb, cs2.alloc_memory_mb) == (64, 4, 500000, 114688)
    assert cs2.partitions == ("hw",) and cs2.boot_time == 1671873827
    assert [(p.name, len(p.nodes)) for p in parts] == [("hw", 4)]


def test_2311_nodes_drain_down_and_gpus():
    by = nodes_by_name(parse_scontrol_nodes(raw("slurm-23.11.10_data_parser-v0.0.40_restd-nodes_slurmweb.json")))
    cn1 = by["cn1"]
    assert (cn1.state, cn1.flags, cn1.display_state) == ("idle", frozenset({"drain"}), "drained")
    assert (cn1.reason, cn1.reason_user, cn1.reason_time) == ("ECC memory error", "root", 1746621136)
    cn4 = by["cn4"]
    assert (cn4.state, cn4.reason) == ("down", "CPU dead")
    assert by["cn2"].state == "mixed" and by["cn2"].alloc_cpus == 45
    assert by["cn1"].gpus == ()  # gres "" with gres_used "gpu:0"
    ia1 = by["ia1"]
    assert [(g.type, g.count, g.alloc_indexes) for g in ia1.gpus] == [("h100", 2, ()), ("h200", 4, ())]
    assert ia1.gpu_total == 6 and ia1.gpu_alloc == 0


def test_2311_node_with_gpu_in_use():
    (ia1,) = parse_scontrol_nodes(raw("slurm-23.11.10_data_parser-v0.0.40_restd-node-with-gpus-mixed_slurmweb.json"))
    assert ia1.state == "allocated"
    assert [(g.type, g.count, g.alloc_indexes) for g in ia1.gpus] == [("h100", 2, (0,)), ("h200", 4, ())]
    assert ia1.gpu_alloc == 1


def test_2411_node_drain():
    (cn1,) = parse_scontrol_nodes(raw("slurm-24.11_data_parser-v0.0.41_restd-node-drain_slurmweb.json"))
    assert (cn1.state, cn1.flags) == ("idle", frozenset({"drain"}))
    assert (cn1.reason, cn1.reason_user, cn1.reason_time) == ("ECC memory error", "root", 1747761356)
    assert cn1.partitions == ("normal",) and cn1.boot_time == 1741793226
    assert cn1.is_unavailable


def test_2411_nodes():
    by = nodes_by_name(parse_scontrol_nodes(raw("slurm-24.11_data_parser-v0.0.41_restd-nodes_slurmweb.json")))
    assert len(by) == 6
    assert by["cn4"].display_state == "drained" and by["cn4"].reason_user == "slurm"
    assert by["cn3"].state == "mixed" and by["cn3"].alloc_memory_mb == 10240
    assert by["cn1"].state == "down" and by["cn1"].reason_time == 1763370733


def test_versions_from_meta():
    def ver(name):
        return parse_version(json.loads(raw(name)))

    assert ver("slurm-21.08.5_openapi-v0.0.37_sinfo--json_rivosinc.json") == "21.08.5"
    assert ver("slurm-23.11.10_data_parser-v0.0.40_restd-nodes_slurmweb.json") == "23.11.10"
    assert ver("slurm-24.11_data_parser-v0.0.41_restd-nodes_slurmweb.json") == "24.11.5"
    assert parse_version("slurm-wlm 22.05.8-4+deb12u3") == "22.05.8"
    assert parse_version({"meta": {"slurm": {"version": {"major": "24", "minor": "11", "micro": "5"}}}}) == "24.11.5"
    assert parse_version("garbage") == "" and parse_version(None) == ""


@pytest.mark.parametrize(
    "value,expected",
    [
        ("RUNNING", ("RUNNING", frozenset())),
        (["PENDING", "REQUEUED"], ("PENDING", frozenset({"REQUEUED"}))),
        (["COMPLETING"], ("COMPLETING", frozenset())),
        (["RUNNING", "COMPLETING"], ("RUNNING", frozenset({"COMPLETING"}))),
    ],
)
def test_job_state_forms(value, expected):
    assert job_state(value, "t") == expected


def test_unknown_job_state_is_kept_with_a_warning():
    w: list[str] = []
    assert job_state(["WIBBLE"], "squeue --json", w) == ("UNKNOWN", frozenset({"WIBBLE"}))
    assert len(w) == 1 and "WIBBLE" in w[0]


def test_exit_status_forms():
    assert exit_status(256, "t") == (1, None)  # wait status: exit 1
    assert exit_status(9, "t") == (0, 9)  # killed by SIGKILL
    assert exit_status({"status": ["SIGNALED"], "return_code": {"set": False, "number": 0},
                        "signal": {"id": {"set": True, "number": 15}, "name": "TERM"}}, "t") == (None, 15)
    assert exit_status(None, "t") == (None, None)


def _job_doc(**fields):
    base = {"job_id": 1, "job_state": ["RUNNING"], "nodes": "n[1-2]"}
    base.update(fields)
    return json.dumps({"jobs": [base]})


def test_held_job_and_requested_gpus():
    (j,) = parse_squeue(_job_doc(job_state="PENDING", nodes="", priority=0,
                                 state_reason="JobHeldAdmin", tres_per_node="gres/gpu:h100:2",
                                 node_count={"set": True, "infinite": False, "number": 2}))
    assert j.held and j.reason == "JobHeldAdmin"
    assert (j.gpus_per_node, j.gpu_type, j.gpu_count) == (2, "h100", 4)


def test_infinite_time_limit_and_sentinels():
    (j,) = parse_squeue(_job_doc(time_limit={"set": True, "infinite": True, "number": 0},
                                 array_task_id=4294967294))
    assert j.time_limit is None and j.array_task_id is None


def test_unknown_node_state_keeps_the_node():
    w: list[str] = []
    doc = json.dumps({"nodes": [{"name": "n1", "state": ["WOBBLY"]}]})
    (n,) = parse_scontrol_nodes(doc, warnings=w)
    assert n.name == "n1" and n.state == "unknown" and w


@pytest.mark.parametrize(
    "data,needle",
    [
        (b"", "empty"),
        (b'{"jobs": [', "not valid JSON"),
        (b"[]", "top level"),
        (b'{"jobs": {}}', "expected a list"),
        (b'{"jobs": [{"name": "x"}]}', "job_id"),
        (b'{"jobs": [{"job_id": 1, "job_state": 5}]}', "job_state"),
        (b'{"jobs": [{"job_id": 1, "job_state": [{}]}]}', "job_state"),
        (b'{"jobs": [{"job_id": 1, "nodes": "@all"}]}', "not a Slurm hostlist"),
        (b'{"jobs": [{"job_id": 1, "nodes": "n[1-"}]}', "hostlist"),
        (b'{"jobs": [{"job_id": 1, "nodes": "n1", "gres_detail": ["gpu:h100:x(IDX:0)"]}]}', "GRES"),
        (b'{"meta": {}, "errors": [{"description": "Unable to contact slurm controller"}]}',
         "Unable to contact"),
        (b"\xff\xfe", "UTF-8"),
    ],
)
def test_bad_input_raises_parse_error_naming_source(data, needle):
    with pytest.raises(ParseError) as exc:
        parse_squeue(data)
    assert "squeue --json" in str(exc.value) and needle in str(exc.value)
