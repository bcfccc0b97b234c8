"""What every batch job a plugin submits needs: where it runs (a :class:`Placement`
and its #SBATCH lines), the header of its script, and what following it yields.

The plugins' jobs (NCCL benchmarks, pre-flight checks) differ in what they run,
not in how Slurm is told where and for how long. Values written into #SBATCH
lines are validated here (:func:`sbatch_value`): node names, partitions and
paths are data, and a newline in one would add a directive of its own.
Plugins see all of this through :mod:`cockpit.plugins.api`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cockpit.errors import UsageError
from cockpit.hostlist import collapse
from cockpit.models.accounting import FINISHED_STATES

# Job states after which nothing more will be written: the finished ones, and
# GONE (SlurmJobs.state once the job has left squeue).
TERMINAL_STATES = frozenset({*FINISHED_STATES, "GONE"})
_SAFE = re.compile(r"^[A-Za-z0-9_.,:@%/+=\[\]-]+$")


def sbatch_value(what: str, value: str) -> str:
    """``value`` if it may stand in an #SBATCH line; raises UsageError naming ``what`` otherwise."""
    if not value or not _SAFE.match(value):
        raise UsageError(f"bad {what} {value!r}: only letters, digits and ._,:@%/+=[]- allowed")
    return value


@dataclass(frozen=True)
class Placement:
    """Where a job runs: a node list, or a node count (1 unless ``num_nodes``)
    in a partition and/or reservation."""

    nodes: tuple[str, ...] = ()
    partition: str | None = None
    reservation: str | None = None
    num_nodes: int | None = None

    @property
    def count(self) -> int:
        """How many nodes the job asks for."""
        return len(self.nodes) if self.nodes else (self.num_nodes or 1)

    @property
    def where(self) -> str:
        """The placement in words, for progress lines and the gate's confirmation."""
        return collapse(self.nodes) or (f"partition {self.partition}" if self.partition else
                                         f"reservation {self.reservation}" if self.reservation else "?")

    def directives(self) -> list[str]:
        """The sbatch options (without ``#SBATCH``). Raises UsageError for a value
        that may not stand in an #SBATCH line."""
        out = [f"--nodes={self.count}"]
        if self.nodes:
            out.append(f"--nodelist={sbatch_value('node list', collapse(self.nodes))}")
        if self.partition:
            out.append(f"--partition={sbatch_value('partition', self.partition)}")
        if self.reservation:
            out.append(f"--reservation={sbatch_value('reservation', self.reservation)}")
        return out


def sbatch_header(name: str, place: Placement, output: str, time_limit: str, exclusive: bool, *,
                  tasks_per_node: int = 1, gpus_per_node: int = 0) -> list[str]:
    """The ``#!/bin/bash`` and ``#SBATCH`` lines of a job script: name, placement,
    tasks and GPUs per node, ``--exclusive``, time limit, output path (``%j`` allowed).
    The caller adds its shell lines after them. Raises UsageError for a value that
    may not stand in an #SBATCH line."""
    lines = ["#!/bin/bash", f"#SBATCH --job-name={sbatch_value('job name', name)}"]
    lines += [f"#SBATCH {d}" for d in place.directives()]
    lines.append(f"#SBATCH --ntasks-per-node={int(tasks_per_node)}")
    if gpus_per_node:
        lines.append(f"#SBATCH --gpus-per-node={int(gpus_per_node)}")
    if exclusive:
        lines.append("#SBATCH --exclusive")
    lines.append(f"#SBATCH --time={sbatch_value('time limit', time_limit)}")
    lines.append(f"#SBATCH --output={sbatch_value('output path', output)}")
    return lines


@dataclass(frozen=True)
class JobOutcome:
    """How a submitted job ended: its final state, the text of its output file
    (empty when it could not be read) and the seconds from submission to that."""

    job_id: int
    state: str
    output: str
    output_path: str
    elapsed: float
