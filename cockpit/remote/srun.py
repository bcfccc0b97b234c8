"""The srun transport: the same probe as one Slurm job step across nodes.

``srun --nodelist=... --ntasks-per-node=1 --label`` scales with Slurm rather
than with the SSH window; SSH stays the way to reach drained nodes, where no
job can run. Each task first prints its node name (a fixed shell snippet that
takes the probe as positional arguments, so no argument is ever re-parsed by a
shell), which maps srun's task labels back to nodes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence

from cockpit.errors import CockpitError
from cockpit.hostlist import collapse
from cockpit.remote.fanout import HostResult

# $SLURMD_NODENAME is the node's Slurm name (slurmd -N), even when hostnames differ.
_WRAP = 'printf "@@cockpit-node %s\\n" "${SLURMD_NODENAME:-$(hostname)}"; exec "$@"'
_LABEL = re.compile(rb"^\s*(\d+): ?(.*)$")
_TASK_EXIT = re.compile(r"srun: error: (\S+): tasks? ([\d,\-]+): Exited with exit code (\d+)")


def srun_argv(nodes: Sequence[str], argv: Sequence[str], *, job_name: str = "cockpit-probe",
              time_limit: str = "5", extra: Sequence[str] = ()) -> list[str]:
    """The srun command line for probing ``nodes`` with ``argv``."""
    return [
        "srun", f"--nodelist={collapse(nodes)}", f"--nodes={len(nodes)}", "--ntasks-per-node=1",
        "--label", f"--job-name={job_name}", f"--time={time_limit}", *extra,
        "sh", "-c", _WRAP, "cockpit-probe", *argv,
    ]


def split_output(nodes: Sequence[str], stdout: bytes, stderr: bytes, returncode: int, duration: float) -> dict[str, HostResult]:
    """Split srun's labelled output into one HostResult per node."""
    out: dict[int, list[bytes]] = {}
    err: dict[int, list[bytes]] = {}
    task_node: dict[int, str] = {}
    for target, blob in ((out, stdout), (err, stderr)):
        for line in blob.splitlines(keepends=True):
            m = _LABEL.match(line)
            if not m:
                continue
            task, text = int(m.group(1)), m.group(2)
            if target is out and text.startswith(b"@@cockpit-node ") and task not in task_node:
                task_node[task] = text.split(b" ", 1)[1].strip().decode("utf-8", "replace")
                continue
            target.setdefault(task, []).append(text if text.endswith(b"\n") else text + b"\n")
    codes = {}
    for m in _TASK_EXIT.finditer(stderr.decode("utf-8", "replace")):
        codes[m.group(1)] = int(m.group(3))
    results = {}
    by_node = {n: t for t, n in task_node.items()}
    for node in nodes:
        task = by_node.get(node)
        if task is None:
            why = _why_no_output(node, stderr.decode("utf-8", "replace"), returncode)
            results[node] = HostResult(node, None, duration=duration, error=f"srun {node}: no output from this node ({why})")
            continue
        results[node] = HostResult(node, codes.get(node, 0), b"".join(out.get(task, [])), b"".join(err.get(task, [])), duration)
    return results


def _why_no_output(node: str, stderr: str, returncode: int) -> str:
    """srun's own words about ``node``: its last stderr line naming the node (a frozen
    slurmd gives "Task launch for StepId=... failed on node node03: Socket timed out
    on send/recv operation"), else srun's last line, else its exit status."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    named = re.compile(rf"(?<![\w.-]){re.escape(node)}(?![\w-])")
    mine = [ln for ln in lines if named.search(ln)]
    if mine:
        return mine[-1]
    return lines[-1] if lines else f"srun exited {returncode}"


async def srun_fanout(runner, nodes: Iterable[str], argv: Sequence[str], *, timeout: float | None = None,
                      extra: Sequence[str] = ()) -> dict[str, HostResult]:
    """Run argv once per node as a job step through ``runner`` (local or SSH to a
    login node). Returns {node: HostResult}; a node that produced nothing gets an
    error. Raises CockpitError only when srun itself cannot be run."""
    nodes = list(dict.fromkeys(nodes))
    start = time.monotonic()
    res = await runner.run(srun_argv(nodes, argv, extra=extra), timeout=timeout)
    if res.returncode != 0 and not res.stdout:
        first = res.err_text().strip().splitlines()
        raise CockpitError(f"srun failed (exit {res.returncode}): {first[0] if first else 'no message'}")
    return split_output(nodes, res.stdout, res.stderr, res.returncode, time.monotonic() - start)
