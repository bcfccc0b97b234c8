"""The delta protocol (cockpit.backends.slurm_delta), in-process: the same results
as the in-process parsers on recorded outputs, and exact add/change/remove deltas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockpit.backends.slurm_delta import Delta, DeltaStore, JobsDiffer, NodesDiffer, dumps, store_for
from cockpit.backends.slurm_json import parse_scontrol_nodes, parse_sinfo, parse_squeue
from cockpit.errors import ParseError

DATA = Path(__file__).resolve().parents[1] / "data"
JOB_FILES = ["slurm-22.05/squeue.json", "slurm-24.11/squeue.json", "slurm-24.11/scontrol-show-job.json",
             *sorted(str(p.relative_to(DATA)) for p in (DATA / "slurm-json").glob("*squeue*")),
             *sorted(str(p.relative_to(DATA)) for p in (DATA / "slurm-json").glob("*restd-job*"))]
NODE_FILES = [("slurm-24.11/scontrol-show-node.json", "scontrol"), ("slurm-22.05/sinfo.json", "sinfo"),
              ("slurm-24.11/sinfo.json", "sinfo"),
              *sorted((str(p.relative_to(DATA)), "scontrol") for p in (DATA / "slurm-json").glob("*restd-node*"))]


def apply_all(store, deltas):
    deltas = list(deltas)
    for d in deltas:
        store.apply(d)
    assert deltas[-1].done and all(not d.done for d in deltas[:-1])
    return deltas


@pytest.mark.parametrize("name", JOB_FILES)
def test_jobs_first_load_equals_in_process_parsing(name):
    raw = (DATA / name).read_bytes()
    store = store_for("jobs")
    deltas = apply_all(store, JobsDiffer(chunk=3).feed(raw))
    expected = parse_squeue(raw)
    assert store.values() == expected
    assert deltas[0].reset and deltas[-1].total == len(expected)
    # the same output again: nothing to send
    differ = JobsDiffer()
    list(differ.feed(raw))
    assert [d for d in differ.feed(raw) if d.upserts or d.removed] == []


@pytest.mark.parametrize("name,fmt", NODE_FILES)
def test_nodes_first_load_equals_in_process_parsing(name, fmt):
    raw = (DATA / name).read_bytes()
    store = store_for("nodes")
    apply_all(store, NodesDiffer(fmt=fmt, source="x", chunk=2).feed(raw))
    expected = parse_sinfo(raw)[0] if fmt == "sinfo" else parse_scontrol_nodes(raw)
    assert store.values() == expected
    differ = NodesDiffer(fmt=fmt)
    list(differ.feed(raw))
    assert [d for d in differ.feed(raw) if d.upserts or d.removed] == []


def _doc(name="slurm-24.11/squeue.json"):
    return json.loads((DATA / name).read_bytes())


def test_add_change_remove_are_exact():
    doc = _doc()
    differ, store = JobsDiffer(chunk=2), store_for("jobs")
    apply_all(store, differ.feed(json.dumps(doc).encode()))
    jobs = doc["jobs"]
    gone = jobs.pop(0)["job_id"]
    jobs[0]["name"] = "renamed"
    changed = jobs[0]["job_id"]
    new = dict(jobs[1], job_id=999_999)
    jobs.append(new)
    raw = json.dumps(doc).encode()
    deltas = apply_all(store, differ.feed(raw))
    upserted = [j.job_id for d in deltas for j in d.upserts]
    assert sorted(upserted) == sorted([changed, 999_999])
    assert [k for d in deltas for k in d.removed] == [gone]
    assert not any(d.reset for d in deltas)
    assert {j.job_id: j for j in store.values()} == {j.job_id: j for j in parse_squeue(raw)}
    assert store.objects[changed].name == "renamed"


def test_unchanged_jobs_keep_their_identity_in_the_store():
    doc = _doc()
    differ, store = JobsDiffer(), store_for("jobs")
    apply_all(store, differ.feed(json.dumps(doc).encode()))
    before = dict(store.objects)
    doc["jobs"][1]["name"] = "other"
    apply_all(store, differ.feed(json.dumps(doc).encode()))
    same = [k for k in before if store.objects[k] is before[k]]
    assert len(same) == len(before) - 1


def test_a_field_cockpit_does_not_read_changes_nothing():
    doc = _doc()
    differ = JobsDiffer()
    list(differ.feed(json.dumps(doc).encode()))
    for job in doc["jobs"]:
        job["last_sched_evaluation"] = {"set": True, "infinite": False, "number": 123}
    deltas = list(differ.feed(json.dumps(doc).encode()))
    assert [d for d in deltas if d.upserts or d.removed] == []


def test_a_parse_error_is_named_as_in_process_and_the_next_result_is_a_whole_reset():
    # The state is updated in place (no second copy of it at 100k jobs), so after
    # a failure half-way the differ starts over: its next Delta says reset and
    # carries every job, and applying it gives exactly what parse_squeue gives.
    raw = (DATA / "slurm-24.11/squeue.json").read_bytes()
    differ = JobsDiffer()
    list(differ.feed(raw))
    doc = _doc()
    # after good jobs were already taken; not a field that matters (a bad state keeps the job, as unknown)
    doc["jobs"][-1]["nodes"] = "@group"
    bad = json.dumps(doc).encode()
    # One job that cannot be read costs that job only, with the in-process warning.
    deltas = list(differ.feed(bad))
    expected: list[str] = []
    parse_squeue(bad, warnings=expected)
    assert deltas[-1].warnings == tuple(expected)
    assert len(expected) == 1 and f"job {doc['jobs'][-1]['job_id']} not understood" in expected[0]
    assert deltas[-1].total == len(doc["jobs"]) - 1
    with pytest.raises(ParseError):
        list(differ.feed(b'{"jobs": ['))
    deltas = list(differ.feed(raw))
    assert deltas[0].reset
    store = DeltaStore(lambda j: j.job_id)
    for d in deltas:
        store.apply(d)
    assert store.values() == parse_squeue(raw)
    assert [d for d in differ.feed(raw) if d.upserts or d.removed] == []


def _in_process_error(raw):
    with pytest.raises(ParseError) as err:
        parse_squeue(raw)
    return str(err.value)


def test_duplicate_job_ids_are_a_parse_error():
    doc = _doc()
    doc["jobs"].append(doc["jobs"][0])
    with pytest.raises(ParseError, match="twice"):
        list(JobsDiffer().feed(json.dumps(doc).encode()))


def test_reset_and_empty_output_with_slurm_errors():
    differ, store = JobsDiffer(), store_for("jobs")
    apply_all(store, differ.feed((DATA / "slurm-24.11/squeue.json").read_bytes()))
    empty = json.dumps({"jobs": [], "errors": [{"error": "Unable to contact slurm controller"}]}).encode()
    deltas = apply_all(store, differ.feed(empty, reset=True))
    assert deltas[-1].reset and deltas[-1].total == 0 and store.values() == ()
    assert any("controller" in e for e in deltas[-1].slurm_errors)


def test_compact_pickling_round_trips_the_models():
    import pickle

    jobs = parse_squeue((DATA / "slurm-24.11/squeue.json").read_bytes())
    nodes = parse_scontrol_nodes((DATA / "slurm-24.11/scontrol-show-node.json").read_bytes())
    d = Delta("jobs", jobs + nodes, ("x",), True)
    assert pickle.loads(dumps(d)) == d


def test_nodes_add_change_remove_are_exact():
    doc = _doc("slurm-24.11/scontrol-show-node.json")
    differ, store = NodesDiffer(), store_for("nodes")
    apply_all(store, differ.feed(json.dumps(doc).encode()))
    nodes = doc["nodes"]
    gone = nodes.pop(0)["name"]
    nodes[0]["reason"] = "Xid 79"
    changed = nodes[0]["name"]
    nodes.append(dict(nodes[1], name="node99", hostname="node99"))
    raw = json.dumps(doc).encode()
    deltas = apply_all(store, differ.feed(raw))
    assert sorted(n.name for d in deltas for n in d.upserts) == sorted([changed, "node99"])
    assert [k for d in deltas for k in d.removed] == [gone]
    assert {n.name: n for n in store.values()} == {n.name: n for n in parse_scontrol_nodes(raw)}
    assert store.objects[changed].reason == "Xid 79"


# -- the streaming split: records cut as the output arrives, whatever the chunking --
def _chunked(raw: bytes, cuts: list[int]):
    last = 0
    for c in sorted(set(cuts)):
        yield raw[last:c]
        last = c
    yield raw[last:]


@pytest.mark.parametrize("name", JOB_FILES)
@given(cuts=st.lists(st.integers(min_value=0, max_value=200_000), max_size=40))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_chunking_gives_the_in_process_result(name, cuts):
    raw = (DATA / name).read_bytes()
    store = store_for("jobs")
    differ = JobsDiffer(chunk=2)
    apply_all(store, differ.feed_stream(_chunked(raw, [c % (len(raw) + 1) for c in cuts]), True))
    assert store.values() == parse_squeue(raw)
    again = list(differ.feed_stream(_chunked(raw, [len(raw) // 3]), False))
    assert len(again) == 1 and not again[0].upserts and not again[0].removed


def test_byte_by_byte_and_records_cut_before_the_last_chunk():
    raw = (DATA / "slurm-22.05/squeue.json").read_bytes()  # meta first, pretty-printed
    store = store_for("jobs")
    differ = JobsDiffer(chunk=1)
    sent = [0]
    read_when_first_came: list[int] = []

    def source():
        for i in range(len(raw)):
            sent[0] = i + 1
            yield raw[i:i + 1]

    for d in differ.feed_stream(source(), True):
        if d.upserts and not read_when_first_came:
            read_when_first_came.append(sent[0])
        store.apply(d)
    assert store.values() == parse_squeue(raw)
    # the first job went out when its record was complete, long before the output ended
    assert read_when_first_came[0] < len(raw) // 4


def test_strings_that_look_like_record_starts_and_nested_account_objects():
    doc = _doc()
    # a name holding the bytes a cut looks for (escaped inside JSON), and a nested
    # object whose first key is "account", at the place a cut is tried
    doc["jobs"][0]["name"] = '"},{"account": "x", "job_id": 1}, {"account":'
    doc["jobs"][1]["x_nested"] = [{"account": "inner"}, {"account": "inner2"}]
    raw = json.dumps(doc, indent=2).encode()
    store = store_for("jobs")
    apply_all(store, JobsDiffer().feed_stream(_chunked(raw, list(range(0, len(raw), 97))), True))
    assert store.values() == parse_squeue(raw)
    assert store.values()[0].name == doc["jobs"][0]["name"]


def test_records_in_an_unknown_shape_are_parsed_whole():
    doc = _doc()
    doc["jobs"] = [{"zzz_first": 1, **j} for j in doc["jobs"]]  # records not starting with "account"
    raw = json.dumps(doc).encode()
    store = store_for("jobs")
    apply_all(store, JobsDiffer().feed_stream(_chunked(raw, [10, 500, 4000]), True))
    assert store.values() == parse_squeue(raw)


def test_an_output_cut_short_is_a_parse_error_and_the_state_starts_over():
    raw = (DATA / "slurm-24.11/squeue.json").read_bytes()
    differ = JobsDiffer()
    list(differ.feed(raw))
    with pytest.raises(ParseError):
        list(differ.feed_stream(_chunked(raw[: len(raw) * 2 // 3], [1000, 5000])))
    deltas = list(differ.feed(raw))
    assert deltas[0].reset and sum(len(d.upserts) for d in deltas) == len(parse_squeue(raw))


def test_a_failing_source_leaves_no_half_state():
    raw = (DATA / "slurm-24.11/squeue.json").read_bytes()
    differ = JobsDiffer(chunk=1)
    list(differ.feed(raw))

    def source():
        yield raw[: len(raw) // 2]
        raise OSError("the command died")

    with pytest.raises(OSError):
        list(differ.feed_stream(source()))
    deltas = list(differ.feed(raw))
    assert deltas[0].reset


@pytest.mark.parametrize("name, fmt", NODE_FILES)
@given(cuts=st.lists(st.integers(min_value=0, max_value=100_000), max_size=30))
@settings(max_examples=15, deadline=None)
def test_nodes_any_chunking_gives_the_in_process_result(name, fmt, cuts):
    raw = (DATA / name).read_bytes()
    store = store_for("nodes")
    differ = NodesDiffer(fmt=fmt)
    apply_all(store, differ.feed_stream(_chunked(raw, [c % (len(raw) + 1) for c in cuts]), True))
    expected = parse_scontrol_nodes(raw) if fmt == "scontrol" else parse_sinfo(raw)[0]
    assert store.values() == expected
    again = list(differ.feed_stream(_chunked(raw, [len(raw) // 2])))
    assert len(again) == 1 and not again[0].upserts and not again[0].removed


def test_node_records_are_cut_before_the_output_ends():
    from cockpit.backends.slurm_delta import _JobSplitter

    raw = (DATA / "slurm-24.11/scontrol-show-node.json").read_bytes()
    splitter = _JobSplitter("nodes", "architecture")
    got = []
    for i in range(0, len(raw), 64):
        got.extend(splitter.push(raw[i:i + 64]))
    assert len(got) == len(json.loads(raw)["nodes"]) - 1  # the last comes with the document's end
    assert [json.loads(r)["name"] for r in got] == [n["name"] for n in json.loads(raw)["nodes"][:-1]]
