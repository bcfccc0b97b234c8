"""Generate the sbatch scripts for both engines.

nccl-tests, as NVIDIA and real sites launch it (REFERENCE.md section 1; nebius
soperator PR 428; aws-samples): one task per GPU (``--ntasks-per-node`` =
``--gpus-per-node``), ``srun --mpi=pmix`` so the ranks form one MPI job, and
``-g 1`` because each process drives one GPU. The torch engine runs the bundled
torch_bench.py with the rendezvous taken from Slurm's environment.

Every value written into the script is validated (no whitespace or newlines in
#SBATCH values) or shell-quoted (``shlex.quote``): node names and image names
are data, never shell.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cockpit.plugins.api import Placement, UsageError, expand, sbatch_header

TORCH_BENCH = Path(__file__).with_name("torch_bench.py")
# NCCL variables worth carrying from the operator's environment or config into the job.
NCCL_PASSTHROUGH = (
    "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_IB_HCA", "NCCL_ALGO", "NCCL_PROTO",
    "NCCL_NVLS_ENABLE", "NCCL_SOCKET_IFNAME", "NCCL_IB_GID_INDEX", "NCCL_IB_TIMEOUT",
    "NCCL_NET_GDR_LEVEL", "NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE", "NCCL_TESTS_SPLIT",
    "NCCL_TESTS_SPLIT_MASK", "NCCL_TESTS_MIN_BW", "NCCL_CROSS_NIC", "NCCL_MIN_NCHANNELS",
)
_ENV_NAME = re.compile(r"^(NCCL|GLOO|TORCH|UCX|OMPI|PMIX|FI)_[A-Z0-9_]+$")


@dataclass(frozen=True)
class NcclTestsSpec:
    binary: str = "all_reduce_perf"
    container_image: str | None = None  # pyxis --container-image
    gpus_per_node: int = 8
    min_bytes: str = "8"
    max_bytes: str = "16G"
    step_factor: int = 2
    iters: int = 20
    warmup: int = 5
    check: int = 1
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class TorchSpec:
    python: str = "python3"
    script: str = str(TORCH_BENCH)
    backend: str = "nccl"  # gloo on CPUs
    tasks_per_node: int = 8  # one per GPU with nccl; CPU gloo runs choose their own
    gpus_per_node: int = 8  # 0 for CPU
    min_bytes: str = "1M"
    max_bytes: str = "1G"
    iters: int = 20
    warmup: int = 5


@dataclass(frozen=True)
class JobSpec:
    placement: Placement
    output: str  # --output path, %j allowed
    job_name: str = "cockpit-nccl"
    time_limit: str = "00:15:00"
    exclusive: bool = True
    env: Mapping[str, str] = field(default_factory=dict)


def env_passthrough(environ: Mapping[str, str], extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The NCCL_* variables to export in the job: known ones from ``environ``, plus ``extra``."""
    out = {k: environ[k] for k in NCCL_PASSTHROUGH if k in environ}
    for k, v in (extra or {}).items():
        if not _ENV_NAME.match(k):
            raise UsageError(f"bad environment variable name {k!r}: expected NCCL_*, GLOO_*, TORCH_*...")
        out[k] = str(v)
    return out


def _header(job: JobSpec, tasks_per_node: int, gpus_per_node: int) -> list[str]:
    lines = sbatch_header(job.job_name, job.placement, job.output, job.time_limit, job.exclusive,
                          tasks_per_node=tasks_per_node, gpus_per_node=gpus_per_node)
    lines.append("set -u")
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(job.env.items())]
    return lines


def nccl_tests_script(job: JobSpec, spec: NcclTestsSpec) -> str:
    """The sbatch script for nccl-tests: one task per GPU, srun --mpi=pmix, -g 1."""
    if spec.gpus_per_node < 1:
        raise UsageError(f"bad GPUs per node {spec.gpus_per_node}: nccl-tests needs GPUs")
    srun = ["srun", "--mpi=pmix", "--cpu-bind=none"]
    if spec.container_image:
        srun.append(f"--container-image={spec.container_image}")
    bench = [spec.binary, "-b", spec.min_bytes, "-e", spec.max_bytes, "-f", str(spec.step_factor),
             "-g", "1", "-n", str(spec.iters), "-w", str(spec.warmup), "-c", str(spec.check),
             *spec.extra_args]
    lines = _header(job, spec.gpus_per_node, spec.gpus_per_node)
    lines.append(shlex.join(srun + bench))
    return "\n".join(lines) + "\n"


def torch_script(job: JobSpec, spec: TorchSpec) -> str:
    """The sbatch script for the bundled torch.distributed benchmark."""
    if spec.backend not in ("nccl", "gloo"):
        raise UsageError(f"bad torch backend {spec.backend!r}: expected nccl or gloo")
    lines = _header(job, spec.tasks_per_node, spec.gpus_per_node)
    # Rendezvous: the first allocated host is the master; the port is spread by job id so
    # two benchmark jobs on one host do not collide.
    lines += [
        'export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)"',
        'export MASTER_PORT="$((20000 + SLURM_JOB_ID % 20000))"',
    ]
    bench = [spec.python, spec.script, "--backend", spec.backend, "--min-bytes", spec.min_bytes,
             "--max-bytes", spec.max_bytes, "--iters", str(spec.iters), "--warmup", str(spec.warmup)]
    lines.append(shlex.join(["srun", *bench]))
    return "\n".join(lines) + "\n"


def placement_from(nodes: str | Sequence[str] | None, partition: str | None = None,
                   reservation: str | None = None, num_nodes: int | None = None) -> Placement:
    """Build a Placement; raises UsageError for a bad hostlist or nothing to run on."""
    names = expand(nodes) if isinstance(nodes, str) else tuple(nodes or ())
    if not names and not partition and not reservation:
        raise UsageError("no nodes chosen: give --nodes HOSTLIST, --partition P or --reservation R")
    return Placement(names, partition, reservation, num_nodes)
