"""Properties behind the round-4 fixes (tests/data/slurm-text/SOURCES.md, "Round 4"):
a sinfo table is known by its titles' shape, not by a list of the titles seen so far (a site's
`sinfo -o` with every field was refused), a `|` row may end with the separator, and a
prolog/epilog failure names the node wherever the line names it."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings, strategies as st

from cockpit.backends.slurm_logscan import scan_log
from cockpit.backends.slurm_textcap import read_capture

GCM = Path(__file__).resolve().parents[1] / "data" / "slurm-text" / "sinfo-o-gcm-20.11.8-pipes-all-fields.txt"
# sinfo's own titles, as the recorded header prints them
TITLES = sorted({t.strip() for t in GCM.read_text().splitlines()[0].split("|")} - {"STATE", "NODELIST"})
NODE = st.from_regex(r"[a-z]{1,6}[0-9]{1,4}", fullmatch=True)
VALUE = st.from_regex(r"[a-z0-9:/.]{1,8}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(extra=st.lists(st.sampled_from(TITLES), unique=True, max_size=8), where=st.integers(0, 8),
       node=NODE, state=st.sampled_from(["idle", "drain*", "down", "mixed"]), vals=st.lists(VALUE, min_size=8, max_size=8),
       trailing=st.booleans())
def test_any_sinfo_titles_with_state_and_nodes_read_as_sinfo(extra, where, node, state, vals, trailing):
    head = list(extra)
    head.insert(min(where, len(head)), "STATE")
    head.append("NODELIST")
    row = [vals[i % len(vals)] for i in range(len(head))]
    row[head.index("STATE")], row[-1] = state, node
    text = "|".join(head) + "\n" + "|".join(row) + ("|" if trailing else "") + "\n"
    cap = read_capture(text)
    assert cap.kind.startswith("sinfo") and not cap.skipped
    assert cap.rows[0]["STATE"] == state and cap.rows[0]["NODELIST"] == node


@settings(max_examples=60, deadline=None)
@given(node=st.from_regex(r"[a-z][a-z0-9-]{0,10}[0-9]", fullmatch=True),
       shape=st.sampled_from(["salloc: Prolog failure on node {n}",
                              "srun: error: Task launch for 7.0 failed on node {n}: Job prolog failed",
                              "[2024-01-01T00:00:00.000] error: epilog failed on node={n}, draining"]))
def test_a_prolog_failure_names_its_node(node, shape):
    (ev,) = scan_log(shape.format(n=node)).events
    assert ev.code == "slurm.log.prolog-failed" and ev.node == node and f"on {node}:" in ev.title


def test_a_hostlist_in_a_log_line_is_each_of_its_nodes():
    """slurmctld writes one line for several nodes as a hostlist (recorded: slurmctld-parallelcluster-
    test-slurm-ranged-*); the Kill task failed line is Slurm's format ("on node(s)=%s") filled in by
    hand. A name that is no valid hostlist stays one node, as written."""
    down = scan_log("error: Nodes gpu[07-08],cpu3 not responding, setting DOWN").events
    assert [e.node for e in down] == ["cpu3", "gpu07", "gpu08"]
    assert all(e.code == "slurm.log.not-responding-down" and e.title.startswith(e.node + " ") for e in down)
    kill = scan_log("error: slurmd error running JobId=9 on node(s)=n[1-2]: Kill task failed").events
    assert [(e.code, e.node) for e in kill] == [("slurm.log.kill-task-failed", "n1"), ("slurm.log.kill-task-failed", "n2")]
    (bad,) = scan_log("error: Nodes gpu[07-x not responding, setting DOWN").events
    assert bad.node == "gpu[07-x"


def test_low_real_memory_in_both_wordings():
    """The 20.02 line is recorded (slurmctld-parallelcluster-1517-low-real-memory.log); the later
    one is Slurm's format string (node_mgr.c: "Node %s has low real_memory size (%lu / %lu) <
    %.2f%%") filled in by hand, not a recorded output: no recording of it was found."""
    for line in ("error: Node ip-10-2-1-120 has low real_memory size (63622 < 64000)",
                 "debug: Node ip-10-2-1-120 has low real_memory size (63622 / 64000) < 100.00%"):
        (ev,) = scan_log(line).events
        assert ev.title == "ip-10-2-1-120 registered 63622 MB, less than its RealMemory=64000: Slurm drains it"



def test_an_squeue_table_without_jobid_is_not_taken_for_sinfo():
    """The header of a recorded squeue (tests/data/slurm-text/cluster-22.05-squeue.txt) with its
    JOBID column left out: a constructed variant, not a recording. It names PARTITION and NODES,
    as sinfo does, but ST and NODELIST(REASON) are squeue's own."""
    import pytest

    from cockpit.errors import ParseError

    rec = (GCM.parent / "cluster-22.05-squeue.txt").read_text().splitlines()
    head = rec[0].split()
    assert head[0] == "JOBID"
    with pytest.raises(ParseError, match="not a sinfo, squeue, sprio or scontrol show table"):
        read_capture(" ".join(head[1:]) + "\n" + " ".join(rec[1].split()[1:]) + "\n")
