"""Immutable data cockpit shows and reasons about. No I/O here.

Times are UNIX epoch seconds (int) or None when Slurm does not know them.
Durations/limits are minutes (int) or None for "unlimited"/unset.
Every backend (CLI, pyslurm, demo, replay) produces exactly these objects.
"""

from cockpit.models.cluster import (
    Block,
    ClusterSnapshot,
    GpuGroup,
    Job,
    JobGpus,
    Node,
    Partition,
    SharedGres,
    Switch,
    Topology,
    gpus_by_node,
    record_fields,
    record_replace,
)

__all__ = [
    "Block",
    "ClusterSnapshot",
    "GpuGroup",
    "Job",
    "JobGpus",
    "Node",
    "Partition",
    "SharedGres",
    "Switch",
    "Topology",
    "gpus_by_node",
    "record_fields",
    "record_replace",
]
