"""cockpit plugin: pre-flight checks the sizing guides ask for before a long run.

* ``storage``: local scratch and shared filesystem speed per node (fio through Slurm),
  filesystem types, checkpoint time for a model size, the slow node named;
* ``burnin``: every GPU under full load (dcgmi diag, or a torch matmul load), sampled
  with nvidia-smi; throttling, power capping, slow GPUs, new Xid/ECC errors; drains
  proposed through the gate;
* ``fabric``: HCA link rates per node against the guide's table for the GPU count.

The TUI screens live in ``cockpit_preflight.screen`` and are imported only by the TUI.
"""

from cockpit.plugins.api import Plugin

from cockpit_preflight.burnin import BurninCheck
from cockpit_preflight.fabric import FabricCheck
from cockpit_preflight.settings import CONFIG
from cockpit_preflight.storage import StorageCheck

plugin = Plugin(
    name="preflight",
    description="Pre-flight checks: storage, burn-in under full load, fabric audit",
    checks=(StorageCheck(), BurninCheck(), FabricCheck()),
    screens={
        "preflight-storage": "cockpit_preflight.screen:StorageScreen",
        "preflight-burnin": "cockpit_preflight.screen:BurninScreen",
        "preflight-fabric": "cockpit_preflight.screen:FabricScreen",
    },
    commands={
        "Pre-flight: storage": "preflight-storage",
        "Pre-flight: burn-in": "preflight-burnin",
        "Pre-flight: fabric audit": "preflight-fabric",
    },
    config=CONFIG,
    actions=("preflight.submit-job", "drain"),
)
