"""Property: damage to one record of a ~1,000-record listing never loses more than
that record, in-process and in the delta worker's differ; and the record that is
lost is named. The listing is the real 100-node Slurm-web 24.05 body repeated to
1,000 with renamed nodes (BUILT, see test_site_listing.py)."""

from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockpit.backends.accounting_text import SACCT_FIELDS, parse_sacct_parsable
from cockpit.backends.slurm_delta import NodesDiffer, store_for
from cockpit.backends.slurm_json import parse_scontrol_nodes, parse_squeue
from test_site_listing import JOBS, built_listing

LISTING = built_listing(10)
NAMES = [n["name"] for n in LISTING["nodes"]]
KEYS = sorted(LISTING["nodes"][0])
JUNK = st.sampled_from([None, 5, -1, 2.5, "x", "", [], {}, [1, {}], {"number": "q"}, "gpu:(null):q(IDX:0-7)",
                        "n[0-999999999]", "@group", {"set": True, "number": [1]}])


@st.composite
def damaged(draw):
    doc = copy.deepcopy(LISTING)
    i = draw(st.integers(0, len(NAMES) - 1))
    how = draw(st.sampled_from(["value", "drop", "record"]))
    if how == "record":
        doc["nodes"][i] = draw(JUNK)
    elif how == "drop":
        doc["nodes"][i].pop(draw(st.sampled_from(KEYS)))
    else:
        doc["nodes"][i][draw(st.sampled_from(KEYS))] = draw(JUNK)
    return i, json.dumps(doc).encode()


def _check(i: int, names: list[str], warnings: list[str] | tuple[str, ...]) -> None:
    others = set(NAMES) - {NAMES[i]}
    assert others <= set(names)
    assert len(names) >= len(NAMES) - 1
    if NAMES[i] not in names and len(names) < len(NAMES):
        assert any(f"node {NAMES[i]} not understood" in w or f"node #{i + 1} not understood" in w
                   for w in warnings), warnings


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(damaged())
def test_one_damaged_node_costs_that_node_only(case):
    i, raw = case
    warnings: list[str] = []
    nodes = parse_scontrol_nodes(raw, warnings=warnings)
    _check(i, [n.name for n in nodes], warnings)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(damaged())
def test_one_damaged_node_costs_that_node_only_in_the_differ(case):
    i, raw = case
    store = store_for("nodes")
    warnings: tuple[str, ...] = ()
    for delta in NodesDiffer().feed(raw):
        store.apply(delta)
        warnings = delta.warnings or warnings
    _check(i, [n.name for n in store.values()], warnings)


JOB_DOC = json.loads(JOBS.read_text())


def _damaged_jobs(i: int, key: str, junk):
    """(jobs read, warnings, the recorded job ids) with job ``i``'s ``key`` set to ``junk``."""
    doc = copy.deepcopy(JOB_DOC)
    doc["jobs"][i][key] = junk
    warnings: list[str] = []
    jobs = parse_squeue(json.dumps(doc).encode(), warnings=warnings)
    return jobs, warnings, [j["job_id"] for j in JOB_DOC["jobs"]]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, len(JOB_DOC["jobs"]) - 1), st.sampled_from(sorted(JOB_DOC["jobs"][0])), JUNK)
def test_one_damaged_job_costs_that_job_only(i, key, junk):
    jobs, warnings, ids = _damaged_jobs(i, key, junk)
    got = {j.job_id for j in jobs}
    assert set(ids[:i] + ids[i + 1:]) <= got
    renamed = key == "job_id" and any(j.job_id == junk for j in jobs)  # job_id 5: renamed, not lost
    if ids[i] not in got and not renamed:
        assert any(" not understood" in w for w in warnings)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, len(SACCT_FIELDS) - 2), st.sampled_from(["x", "-5", "1:2:3:4", "n[0-999999999]", "cpu"]))
def test_one_damaged_sacct_line_costs_that_line_only(field, junk):
    good = ["7|7|u|a|gpu|normal|COMPLETED|0:0|0:0|1|2|3|1|10|1|node01|cpu=2,gres/gpu=1|cpu=2|00:01|"
            "cpu=00:00:01,mem=1M|cpu=00:00:01|None|ok",
            "8|8|u|a|gpu|normal|COMPLETED|0:0|0:0|1|2|3|1|10|1|node01|cpu=2|cpu=2|00:01|||None|ok"]
    parts = good[0].split("|")
    parts[field] = junk
    warnings: list[str] = []
    recs = parse_sacct_parsable("|".join(parts) + "\n" + good[1] + "\n", warnings=warnings)
    assert "8" in {r.job_id for r in recs}
    if len(recs) == 1:
        assert len(warnings) == 1 and "sacct record" in warnings[0] and "not understood" in warnings[0]


# The keys that hold a field that matters, and the field each feeds.
FIELD_OF = {"state": "state", "gres": "gpus", "gres_used": "gpus", "reason": "reason"}


@st.composite
def damaged_field(draw):
    doc = copy.deepcopy(LISTING)
    i = draw(st.integers(0, len(NAMES) - 1))
    key = draw(st.sampled_from(sorted(FIELD_OF)))
    doc["nodes"][i][key] = draw(JUNK)
    return i, key, json.dumps(doc).encode()


def _check_field(i: int, key: str, nodes: list, warnings) -> None:
    # the node stays: read, or with exactly that field unknown and named
    assert [n.name for n in nodes] == NAMES
    victim = nodes[i]
    assert all(not n.unknown for n in nodes if n is not victim)
    assert victim.unknown <= {FIELD_OF[key]}
    if victim.unknown:
        assert victim.display_state == "unknown" or FIELD_OF[key] != "state"
        assert victim.gpu_cell == "?" or FIELD_OF[key] != "gpus"
        assert any(f"node {NAMES[i]} {FIELD_OF[key]} not understood" in w for w in warnings), warnings


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(damaged_field())
def test_a_damaged_field_that_matters_keeps_the_node_with_it_unknown(case):
    i, key, raw = case
    warnings: list[str] = []
    _check_field(i, key, list(parse_scontrol_nodes(raw, warnings=warnings)), warnings)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(damaged_field())
def test_a_damaged_field_that_matters_keeps_the_node_in_the_differ(case):
    i, key, raw = case
    store = store_for("nodes")
    warnings: tuple[str, ...] = ()
    for delta in NodesDiffer().feed(raw):
        store.apply(delta)
        warnings = delta.warnings or warnings
    by_name = {n.name: n for n in store.values()}
    _check_field(i, key, [by_name[n] for n in NAMES], warnings)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, len(JOB_DOC["jobs"]) - 1),
       st.sampled_from(["job_state", "state_reason", "gres_detail", "tres_per_node"]), JUNK)
def test_a_damaged_job_field_that_matters_keeps_the_job(i, key, junk):
    jobs, warnings, ids = _damaged_jobs(i, key, junk)
    assert [j.job_id for j in jobs] == ids
    victim = jobs[i]
    field = {"job_state": "state", "state_reason": "reason"}.get(key, "gpus")
    assert victim.unknown <= {field} and all(not j.unknown for j in jobs if j is not victim)
    if victim.unknown:
        assert any(f"job {ids[i]} {field} not understood" in w for w in warnings), warnings
