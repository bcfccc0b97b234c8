"""A cluster not in front picks the jobs whose output to watch and the nodes whose GPUs
to read (cockpit/tui/pulsedata.py behind_watch) as the Pulse does for the cluster in
front (compute): the same random snapshots, output mtimes and telemetry as the Pulse's
own property (test_pulseindex.py), compared."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from cockpit.models import ClusterSnapshot
from cockpit.tui.pulsedata import ChangeTracker, behind_watch, compute

from test_pulseindex import NODE_OBJS, NOW, PARTS, step_st  # tests/unit is on sys.path


@settings(max_examples=60, deadline=None)
@given(st.lists(step_st, min_size=1, max_size=6))
def test_a_cluster_behind_watches_what_its_pulse_would(steps):
    tracker = ChangeTracker()
    for i, (jobs, _rebuild, outputs, telemetry) in enumerate(steps):
        snap = ClusterSnapshot(nodes=NODE_OBJS, partitions=PARTS, jobs=tuple({j.job_id: j for j in jobs}.values()),
                               fetched_at=NOW + i)
        front = compute(snap, tracker, True, NOW + i, telemetry=telemetry, outputs=outputs, silent_after=600.0,
                        watch=3)
        behind = behind_watch(snap, outputs=outputs, telemetry=telemetry, usual=tracker.usual, now=NOW + i,
                              silent_after=600.0, watch=3)
        assert behind == (front.candidates, front.watch_nodes)
