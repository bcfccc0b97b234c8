"""State the TUI keeps for the whole session, at the size of the cluster, in
containers the cyclic GC does not walk: every full collection (settle_heap's thaw,
issue #24) walks each tracked container's entries, and a pause over 50 ms holds keys."""

from __future__ import annotations

import gc

from cockpit.config import Config
from cockpit.models import ClusterSnapshot, Node
from cockpit.tui.fleet import ClusterLink


def test_a_clusters_node_names_are_kept_where_a_full_collection_need_not_walk_them():
    link = ClusterLink(None, Config(), read_only=True)
    link.snapshot = ClusterSnapshot(nodes=tuple(Node(name=f"gpu{i:05d}", state="IDLE") for i in range(3000)))
    names = link.node_names()
    assert len(names) == 3000 and "gpu00042" in names and "gpu03000" not in names
    assert {"gpu00001", "login1"} & names == {"gpu00001"}  # what the watches ask of it
    gc.collect()
    assert not gc.is_tracked(link._names[1])
    link.snapshot = ClusterSnapshot(nodes=(Node(name="n1", state="IDLE"),))
    assert set(link.node_names()) == {"n1"}  # a new snapshot's nodes: made again
