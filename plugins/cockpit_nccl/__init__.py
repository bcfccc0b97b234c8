"""cockpit plugin: NCCL bandwidth tests launched through Slurm, judged, the slow node named.

Engines: nccl-tests (``*_perf`` under ``srun --mpi=pmix``) and the bundled
torch.distributed benchmark (torch_bench.py). Modes: node, all, pair. The TUI
screen lives in ``cockpit_nccl.screen`` and is imported only by the TUI.
"""

from cockpit.plugins.api import OpenerSpec, Plugin

from cockpit_nccl.check import NcclCheck
from cockpit_nccl.settings import CONFIG

plugin = Plugin(
    name="nccl",
    description="NCCL bandwidth tests through Slurm: judged, with history and slow-node bisection",
    checks=(NcclCheck(),),
    screens={"nccl": "cockpit_nccl.screen:NcclScreen"},
    commands={"NCCL bandwidth test": "nccl"},
    # The screen starts on the selected (or marked) nodes.
    openers=(OpenerSpec("nccl", screen="nccl", with_nodes=True),),
    config=CONFIG,
    actions=("nccl.submit-benchmark",),
)
