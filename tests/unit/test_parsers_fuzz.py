"""Fuzz every Slurm parser: whatever comes in, only ParseError may come out; and the
evidence parsers (kernel logs, nvidia-smi, NVLink, topo -m, nccl-tests, PyTorch logs,
training configs, saved Slurm outputs): a truncated or mangled real recording never
reads OK (the property and its scope are stated above those tests, further down).

Inputs: arbitrary bytes and text, arbitrary JSON (also placed under the keys the
parsers look for), and mutations of the real recorded fixtures (keys dropped,
values swapped for other JSON types). Example counts are kept moderate so the
file runs in well under 30 s on 2 cores.
"""

from __future__ import annotations

import json
import re
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


# --- Evidence parsers: truncated or mangled real recordings never read OK ---------------
#
# The property, per input family (the recordings are tests/data/<family>/, see SOURCES.md):
#
# * structured outputs (nvidia-smi -q -x XML and -q text, nvlink --status, nccl-tests,
#   DeepSpeed JSON, saved Slurm JSON), cut anywhere inside their content: the verdict is
#   never OK (a parse error counts as UNKNOWN). "Inside" ends where a complete output's
#   last section starts: -q text's final "Processes" section, nccl-tests' "Avg bus
#   bandwidth" line; a cut after those still holds everything that is judged. A capture of
#   several -q snapshots cut before its last one is a whole output of fewer snapshots: the
#   cuts start at the last "Attached GPUs" line.
#   nvlink --status announces no GPU count, so a cut exactly where a GPU's block ends is a
#   whole output of fewer GPUs and is left out.
# * nvlink --status with foreign lines inserted anywhere: never OK.
# * line logs (kernel logs, PyTorch/NCCL logs), whose whole verdict is above OK: cut anywhere
#   after the lines that carry their first problem, or with foreign lines inserted between
#   records (never inside a message the driver split over several lines): never OK. A log cut
#   before its first problem is indistinguishable from a healthy one, so it is not included.
# * topo -m, cut anywhere: a parse error, a WARN, or the very NVLink domains of the whole
#   matrix (the matrix is symmetric, so an excerpt's rows can say everything).
#
# Mangling the values themselves (a digit changed) is outside the property: no parser can
# tell a changed number from a real one.

import asyncio  # noqa: E402
import tempfile  # noqa: E402

from cockpit.plugins.api import Severity, verdict  # noqa: E402
from fuzzlib import TRUNC, foreign, with_lines  # noqa: E402

EVIDENCE = Path(__file__).resolve().parents[1] / "data"
_TMP = Path(tempfile.mkdtemp(prefix="cockpit-fuzz-"))


def _probe_verdict(probe, field: str, text: str) -> Severity:
    from cockpit_runbooks.context import NotApplicable, RunContext
    from pluginctx import make_ctx

    path = _TMP / "input.txt"
    path.write_text(text)
    rc = RunContext(make_ctx(config={}), **{field: (str(path),)})
    try:
        return verdict(asyncio.run(probe(rc, {})).findings)
    except NotApplicable:  # an empty file: the step is n/a and adds no finding, never an OK
        return Severity.UNKNOWN


def _files(family: str, *suffixes: str) -> list[Path]:
    return sorted(p for p in (EVIDENCE / family).iterdir() if p.suffix in suffixes)


def _smi(text):
    from cockpit_runbooks import probes_gpu

    return _probe_verdict(probes_gpu.gpu_health, "smi_files", text)


def _nvlink(text):
    from cockpit_runbooks import probes_gpu

    return _probe_verdict(probes_gpu.nvlink_status, "nvlink_files", text)


def _kernel(text):
    from cockpit_runbooks import probes_node

    return _probe_verdict(probes_node.kernel_xid, "kernel_logs", text)


def _watchdog(text):
    from cockpit_runbooks import probes_job

    return _probe_verdict(probes_job.watchdog_logs, "job_logs", text)


def _content_end(text: str, family: str) -> int:
    """Where a cut stops being inside the content (see the property above)."""
    body = text.rstrip()
    if family == "smi-text":
        return text.rfind("\n    Processes")
    if family == "nccl":
        return text.find("Avg bus bandwidth")
    return len(body)


SMI_XML = _files("nvidia-smi-q", ".xml")
SMI_TEXT = [p for p in _files("nvidia-smi-q", ".txt") if "\n    Processes" in p.read_text()]
NVLINK = [p for p in _files("nvlink", ".txt") if p.stat().st_size]
NCCL = [p for p in _files("nccl-tests", ".txt") if "Avg bus bandwidth" in p.read_text()]


@TRUNC
@given(st.sampled_from(SMI_XML + SMI_TEXT), st.floats(0, 1, exclude_max=True))
def test_cut_nvidia_smi_never_reads_ok(path, where):
    text = path.read_text()
    end = _content_end(text, "smi-text" if path.suffix == ".txt" else "xml")
    # a capture of several snapshots, cut before its last one announces its GPUs, is whole
    start = text.find("\n", text.rfind("\nAttached GPUs") + 1) if path.suffix == ".txt" else 0
    assert _smi(text[: start + int(where * (end - start))]) != Severity.OK


@TRUNC
@given(st.sampled_from(NVLINK), st.floats(0, 1, exclude_max=True))
def test_cut_nvlink_status_never_reads_ok(path, where):
    text = path.read_text()
    cut = text[: int(where * _content_end(text, "nvlink"))]
    if text[len(cut.rstrip()):].lstrip("\n").startswith("GPU "):
        return  # cut where a GPU's block ends: a whole output of fewer GPUs (nvlink -s has no count)
    assert _nvlink(cut) != Severity.OK


@TRUNC
@given(st.sampled_from(NVLINK), st.lists(st.tuples(st.integers(0, 200), foreign), min_size=1, max_size=3))
def test_nvlink_status_with_foreign_lines_never_reads_ok(path, inserts):
    assert _nvlink(with_lines(path.read_text(), inserts)) != Severity.OK


@TRUNC
@given(st.sampled_from(NCCL), st.floats(0, 1, exclude_max=True))
def test_cut_nccl_tests_output_never_reads_ok(path, where):
    from cockpit_nccl.judge import judge
    from cockpit_nccl.parser import parse

    text = path.read_text()
    cut = text[: int(where * _content_end(text, "nccl"))]
    try:
        run = parse(cut, path.name)
    except ParseError:
        return
    # even against a figure every recorded run beats
    assert judge(run, expected=1.0).severity != Severity.OK


@TRUNC
@given(st.sampled_from(_files("training-configs", ".json") + _files("slurm-postmortem", ".json")),
       st.floats(0, 1, exclude_max=True))
def test_cut_json_inputs_are_refused(path, where):
    from cockpit_layout.spec import parse_deepspeed_config
    from cockpit_runbooks import probes_slurm

    text = path.read_text()
    cut = text[: int(where * len(text.rstrip()))]
    if path.parent.name == "slurm-postmortem":
        assert _probe_verdict(probes_slurm.slurm_records, "slurm_files", cut) != Severity.OK
        return
    try:
        parse_deepspeed_config(json.loads(cut), path.name)
    except ValueError:
        return
    raise AssertionError("a cut DeepSpeed config was read")


def _first_problem_end(text: str, judge) -> int:
    """The end (in characters) of the shortest run of whole lines whose verdict is above OK."""
    lines = text.splitlines(keepends=True)
    for n in range(1, len(lines) + 1):
        if judge("".join(lines[:n])) != Severity.OK:
            return len("".join(lines[:n]))
    raise AssertionError("the whole recording reads OK")


def _line_logs():
    out = []
    for family, judge in (("xid-dmesg", _kernel), ("pytorch-nccl-timeout", _watchdog)):
        for p in _files(family, ".txt", ".log"):
            text = p.read_text()
            if judge(text) != Severity.OK:
                out.append((p, judge, _first_problem_end(text, judge)))
    return out


LINE_LOGS = _line_logs()


@TRUNC
@given(st.sampled_from(LINE_LOGS), st.floats(0, 1))
def test_line_logs_cut_after_their_first_problem_never_read_ok(case, where):
    path, judge, first = case
    text = path.read_text()
    assert judge(text[: first + int(where * (len(text) - first))]) != Severity.OK


@TRUNC
@given(st.sampled_from(LINE_LOGS), st.lists(st.tuples(st.integers(0, 500), foreign), min_size=1, max_size=4))
def test_line_logs_with_foreign_lines_between_records_never_read_ok(case, inserts):
    path, judge, _ = case
    lines = path.read_text().splitlines()
    starts = [i for i, ln in enumerate(lines) if ln[:1].strip()] + [len(lines)]  # not inside a split message
    for pos, junk in sorted(((starts[at % len(starts)], junk) for at, junk in inserts), reverse=True):
        lines.insert(pos, junk)
    assert judge("\n".join(lines)) != Severity.OK


@TRUNC
@given(st.sampled_from(_files("layout", ".txt")), st.floats(0, 1, exclude_max=True))
def test_cut_topo_m_is_refused_warned_or_gives_the_whole_matrix_domains(path, where):
    from cockpit_layout.alloc import read_topo_m
    from cockpit_layout.coverage import DomainSource, coverage_findings

    text = path.read_text()
    try:
        whole = read_topo_m(text)
    except ParseError:
        return  # topo -p2p: refused whole, and so cut
    try:
        cut = read_topo_m(text[: int(where * len(text.rstrip()))])
    except ParseError:
        return
    warned = any(f.severity != Severity.OK for f in coverage_findings(DomainSource("topo -m", cut), len(whole.gpus)))
    same = {g: cut.domains.get(g) for g in whole.domains}
    grouped = {frozenset(g for g in whole.domains if whole.domains[g] == d) for d in set(whole.domains.values())}
    cut_grouped = {frozenset(g for g in whole.domains if same[g] == d) for d in set(same.values())}
    assert warned or cut_grouped == grouped


@TRUNC
@given(st.sampled_from(_files("slurm-text", ".txt", ".log")), st.floats(0, 1), foreign)
def test_cut_or_mangled_slurm_text_never_raises(path, where, junk):
    """A --slurm-file cut anywhere, or with a foreign line in it, is a verdict, never a traceback;
    an sdiag cut before its thread count line is never OK."""
    from cockpit_runbooks import probes_slurm

    text = path.read_text()
    cut = text[: int(where * len(text))]
    lines = cut.splitlines()
    mangled = "\n".join(lines[:1] + [junk] + lines[1:])
    for t in (cut, mangled):
        sev = _probe_verdict(probes_slurm.slurm_records, "slurm_files", t)
        if "sdiag" in path.name and "Server thread count:" not in t:
            assert sev != Severity.OK


# --- Kernel logs: NVIDIA fault lines never vanish into an OK (issue #26) -------------------
#
# * any recorded kernel-log line that is an NVIDIA fault (an Xid, an SXid, a Fabric Manager
#   error, a driver line no rule reads), set alone or among foreign lines, mangled by a cut
#   after its first 12 characters: the verdict is never OK (understood -> its finding;
#   not understood -> UNKNOWN naming it);
# * empty and whitespace-only input is n/a (never OK) for every file probe.

def _fault_lines():
    from cockpit_runbooks import unrecognised

    out = []
    for p in _files("xid-dmesg", ".txt", ".log"):
        # GPU Xid records are left out: the catalog judges them, some as benign (Xid 63, a row
        # remapped: IGNORE). SXids stay. A timestamp before "NVRM: Xid" hid them from [:12].
        out += [ln for ln in p.read_text().splitlines()
                if unrecognised.is_fault_like(ln) and not re.search(r"(?<!S)Xid\b", ln)]
    return out


FAULT_LINES = _fault_lines()


@TRUNC
@given(st.sampled_from(FAULT_LINES), st.floats(0, 1), st.lists(foreign, max_size=3), st.integers(0, 3))
def test_an_nvidia_fault_line_never_reads_ok(line, where, junk, at):
    from cockpit_runbooks import unrecognised

    cut = line[: 12 + int(where * (len(line) - 12))]
    if not unrecognised.is_fault_like(cut):
        return  # the cut took away what made it an NVIDIA fault line (e.g. only "[  84.3] NVRM: GPU6" left)
    lines = list(junk)
    lines.insert(at % (len(lines) + 1), cut)
    assert _kernel("\n".join(lines) + "\n") != Severity.OK, cut


@TRUNC
@given(st.sampled_from(["", "\n", "  \n\t\n", "\r\n"]),
       st.sampled_from(["kernel", "smi", "nvlink"]))
def test_empty_input_is_never_ok(text, family):
    judge = {"kernel": _kernel, "smi": _smi, "nvlink": _nvlink}[family]
    assert judge(text) != Severity.OK
