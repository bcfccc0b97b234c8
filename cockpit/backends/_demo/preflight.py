"""The output of cockpit's pre-flight jobs (``cockpit-storage``, ``cockpit-burnin``)
submitted to the demo: what their script would print on the simulated nodes.

The script is read, not run: its ``srun --ntasks-per-node=1 --label bash -c
NODE_SCRIPT cockpit-preflight ARGS...`` line gives the arguments (paths and fio
settings; engine, duration and interval), the job's nodes its tasks. Each task's
lines carry srun's label (``0: ``, ``1: ``...), one block per node in task
order; a first, unlabelled line says the output is SIMULATED, and so does each
node's ``@@preflight`` header (``simulated=yes``). Figures and readings come
from _demo/storage.py and _demo/burnin.py (the scenario's slow storage node and
thermally throttled node among them); the pre-flight plugin's own parsers read
the result like a real job's.
"""

from __future__ import annotations

import shlex
from typing import Any

from cockpit.backends._demo import burnin, storage
from cockpit.backends._demo.state import SimJob

NAMES = ("cockpit-storage", "cockpit-burnin")
MARK = "cockpit-preflight"  # the script's $0: its arguments follow


def script_args(script: str) -> list[str] | None:
    """The node script's arguments from the srun line (which may span lines: its quoted
    text holds newlines); None when there is no such line or it does not parse."""
    at = script.find("\nsrun ")
    if at < 0:
        return None
    try:
        words = shlex.split(script[at + 1:])
    except ValueError:
        return None
    return words[words.index(MARK) + 1:] if MARK in words else None


def labelled(blocks: list[list[str]]) -> list[str]:
    return [f"{task}: {line}" for task, lines in enumerate(blocks) for line in lines]


def job_output(sc: Any, job: SimJob) -> str:
    """The --output file of a finished pre-flight job."""
    check = job.name.removeprefix("cockpit-")
    args = script_args(job.script)
    head = (f"# SIMULATED by cockpit --demo: {check} job {job.job_id} on {len(job.nodes)} node(s); "
            "nothing ran, the figures are made up\n")
    if args is None:
        return head + "cockpit-preflight: no srun line with the node script's arguments\n"
    start = job.start_time or 0
    if check == "storage":
        p = storage.Params.from_args(args)
        blocks = [storage.node_lines(n, job.job_id, start, p, n == sc.slow_storage_node, len(job.nodes))
                  for n in job.nodes]
    else:
        b = burnin.Params.from_args(args)
        blocks = [burnin.node_lines(n, job.job_id, start, b, min(job.gpus_per_node, sc.sim.nodes[n].gpus),
                                    n == sc.throttled_node) for n in job.nodes]
    return head + "\n".join(labelled(blocks)) + "\n"
