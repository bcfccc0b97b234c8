"""cockpit plugin: validate a 3D-parallel (TP/PP/DP, CP, EP) layout against the cluster.

The check (``cockpit check layout``) and its rules import no Textual; the
picture lives in :mod:`cockpit_layout.screen`, imported only by the TUI.
"""

from cockpit.plugins.api import ConfigKey, KeySpec, Plugin

from .check import LayoutCheck
from .openers import OPENERS

plugin = Plugin(
    name="layout",
    description="Validate a TP/PP/DP job layout against GPUs, NVLink domains and switches",
    checks=(LayoutCheck(),),
    screens={"layout": "cockpit_layout.screen:LayoutScreen"},
    commands={"Layout: validate a job's parallel layout": "layout"},
    keys=(KeySpec("l", "plugin.layout", "Layout",
                  "layout of the selected job: TP/PP/DP form, then rank map picture and findings (layout plugin)",
                  "layout-job"),),
    openers=OPENERS,
    config={
        "nvlink_domain_size": ConfigKey(
            int, 0, "GPUs per NVLink domain inside a node; 0 = all GPUs of the node"
        ),
        "nvlink_spans_block": ConfigKey(
            bool, False, "a topology/block block is one NVLink domain (NVL72 racks)"
        ),
        "gpu_memory_gib": ConfigKey((int, float), 80.0, "memory per GPU for the memory estimate"),
    },
)

__all__ = ["plugin", "LayoutCheck"]
