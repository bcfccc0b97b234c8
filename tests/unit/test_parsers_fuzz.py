"""Fuzz every Slurm parser: whatever comes in, only ParseError may come out.

Inputs: arbitrary bytes and text, arbitrary JSON (also placed under the keys the
parsers look for), and mutations of the real recorded fixtures (keys dropped,
values swapped for other JSON types). Example counts are kept moderate so the
file runs in well under 30 s on 2 cores.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockpit.backends.slurm_json import (
    parse_partitions,
    parse_scontrol_nodes,
    parse_sinfo,
    parse_squeue,
    parse_version,
)
from cockpit.backends.slurm_text import (
    gres_from_scontrol_detail,
    parse_scontrol_kv,
    parse_scontrol_partitions,
    parse_topology,
    parse_topology_conf,
)
from cockpit.errors import ParseError

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm-json"
JSON_PARSERS = (parse_squeue, parse_sinfo, parse_scontrol_nodes, parse_partitions)
TEXT_PARSERS = (parse_topology, parse_topology_conf, parse_scontrol_kv, gres_from_scontrol_detail,
                parse_scontrol_partitions)
FUZZ = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

scalars = st.none() | st.booleans() | st.integers(-(2**65), 2**65) | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    scalars,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=12), kids, max_size=5),
    max_leaves=25,
)
# Values that look like Slurm's own: number objects, state lists, hostlists, GRES.
slurmish = st.one_of(
    json_values,
    st.fixed_dictionaries({"set": st.booleans(), "infinite": st.booleans(), "number": scalars}),
    st.lists(st.sampled_from(["RUNNING", "PENDING", "IDLE", "DRAIN", "MIXED", "bogus", ""]), max_size=3),
    st.sampled_from(["n[1-3]", "n[3-1]", "n[", "gpu:h100:2(IDX:0-1)", "gpu:x:y", "gpu(IDX:N/A)",
                     "gpu:h100:2(IDX:5-1)", "gres/gpu:abc", "(", ")", "a,,b", "n[0-99999999999]"]),
)


def _only_parse_errors(fn, data):
    try:
        fn(data)
    except ParseError as exc:
        assert str(exc)  # a one-line message, never empty


def _fixture_records():
    out = []
    for f in sorted(DATA.glob("*.json")):
        doc = json.loads(f.read_bytes())
        for key in ("jobs", "nodes"):
            for rec in doc.get(key, []):
                out.append((key, rec))
    return out


RECORDS = _fixture_records()


@FUZZ
@given(st.binary(max_size=300))
def test_arbitrary_bytes(data):
    for fn in JSON_PARSERS:
        _only_parse_errors(fn, data)
    parse_version(data)


@FUZZ
@given(st.text(max_size=300))
def test_arbitrary_text(text):
    for fn in TEXT_PARSERS + JSON_PARSERS:
        _only_parse_errors(fn, text)
    parse_version(text)


@FUZZ
@given(json_values, st.sampled_from(["jobs", "nodes", "sinfo", "partitions", None]))
def test_arbitrary_json(value, key):
    doc = value if key is None else {key: value}
    data = json.dumps(doc)
    for fn in JSON_PARSERS:
        _only_parse_errors(fn, data)
    parse_version(doc)


@FUZZ
@given(st.lists(st.dictionaries(
    st.sampled_from(["job_id", "job_state", "nodes", "node_count", "gres_detail", "exit_code",
                     "time_limit", "array_job_id", "array_task_id", "het_job_id", "priority",
                     "tres_per_node", "tres_per_job", "name", "state", "state_flags", "gres",
                     "gres_used", "partitions", "reason_changed_at", "cpus", "node", "partition",
                     "reason", "memory", "features"]),
    slurmish, max_size=8), max_size=3), st.sampled_from(["jobs", "nodes", "sinfo"]))
def test_records_with_slurm_keys(recs, key):
    data = json.dumps({key: recs})
    for fn in JSON_PARSERS:
        _only_parse_errors(fn, data)


@FUZZ
@given(st.sampled_from(RECORDS), st.data())
def test_mutated_real_records(keyed, data):
    key, rec = keyed
    rec = dict(rec)
    names = sorted(rec)
    for name in data.draw(st.lists(st.sampled_from(names), max_size=6, unique=True)):
        if data.draw(st.booleans()):
            del rec[name]
        else:
            rec[name] = data.draw(slurmish)
    doc = json.dumps({key: [rec]})
    for fn in JSON_PARSERS:
        _only_parse_errors(fn, doc)


@FUZZ
@given(st.lists(st.tuples(
    st.sampled_from(["SwitchName", "Level", "Nodes", "Switches", "LinkSpeed", "BlockName",
                     "AggregatedBlock", "BlockIndex", "BlockSize", "JobId", "NodeName", "GRES",
                     "Gres", "GresUsed", "Reason", "PartitionName", "MaxTime", "x"]),
    st.sampled_from(["", "1", "-1", "n[1-2]", "s[0-1]", "gpu:h100:2(IDX:0-1)", "gpu:bad",
                     "a b", "n[", "N/A", "s0"])), max_size=8), st.integers(1, 3))
def test_key_value_text(pairs, per_line):
    lines = [" ".join(f"{k}={v}" for k, v in pairs[i:i + per_line])
             for i in range(0, len(pairs), per_line)]
    text = "\n".join(lines)
    for fn in TEXT_PARSERS:
        _only_parse_errors(fn, text)
