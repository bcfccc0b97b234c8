"""What a launch script says about the launch itself: the launcher (whose defaults the
rules must use) and how many nodes and processes per node it starts.

Read from torchrun's ``--nnodes`` / ``--nproc-per-node``, ms-swift's ``NNODES=`` /
``NPROC_PER_NODE=`` environment, srun's and ``#SBATCH`` lines' ``--nodes`` (``-N``),
``--ntasks-per-node``, ``--gpus-per-node`` and ``--gres=gpu:N``. These were listed as
"not used" while the check asked Slurm for the very numbers they hold. A value that is
not one plain count (an elastic ``1:4``, ``--nproc-per-node gpu``, an unset variable)
is listed as not used, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

# flag (dash spelling) -> what it counts
LAUNCH_FLAGS = {
    "--nnodes": "nnodes", "--nproc-per-node": "nproc", "--nodes": "nodes", "-N": "nodes",
    "--ntasks-per-node": "ntasks", "--gpus-per-node": "gpus", "--gres": "gres",
}
_ENV = {"NNODES": "env_nnodes", "NPROC_PER_NODE": "env_nproc"}
# best source first: torchrun's own, then the launcher's environment, then Slurm's request
_NODES_FROM = ("nnodes", "env_nnodes", "nodes")
_NPROC_FROM = ("nproc", "env_nproc", "ntasks", "gpus", "gres")
_SBATCH = re.compile(r"^\s*#SBATCH\s+(.*)$", re.MULTILINE)
_MS_SWIFT = re.compile(r"(?:^|\s)(?:megatron|swift)\s+(?:sft|pt|rlhf)\b")
_MEGATRON_LM = re.compile(r"\bpretrain_\w+\.py\b")


def sbatch_lines(text: str) -> str:
    """The options of the script's ``#SBATCH`` lines (shell comments, so the word
    splitter drops them), one line each, to be read before the script's own words."""
    return "\n".join(m.group(1).split("#", 1)[0] for m in _SBATCH.finditer(text))


def launcher_of(text: str) -> str | None:
    """``ms-swift`` for ``megatron sft|pt|rlhf`` (Megatron-SWIFT's commands),
    ``megatron-lm`` for a ``pretrain_*.py`` entry point, None when neither shows."""
    if _MS_SWIFT.search(text):
        return "ms-swift"
    if _MEGATRON_LM.search(text):
        return "megatron-lm"
    return None


def _count(kind: str, raw: str) -> int | None:
    value = raw.split(":")[-1] if kind in ("gpus", "gres") else raw
    if kind == "gres" and not raw.startswith("gpu"):
        return None
    return int(value) if value.isdecimal() and int(value) > 0 else None


def launch_flag(toks: Sequence[str], i: int) -> tuple[str, str | None, int] | None:
    """(kind, raw value, index of the last token used) when ``toks[i]`` is a launch flag."""
    tok = toks[i]
    if tok.startswith("-N") and not tok.startswith("--"):
        if tok == "-N":
            return ("nodes", toks[i + 1] if i + 1 < len(toks) else None, i + 1)
        return ("nodes", tok[2:].lstrip("="), i) if tok[2:].lstrip("=").isdecimal() else None
    flag, eq, inline = tok.partition("=")
    flag = "--" + flag[2:].replace("_", "-")
    if flag not in LAUNCH_FLAGS or flag == "-N":
        return None
    if eq:
        return (LAUNCH_FLAGS[flag], inline, i)
    return (LAUNCH_FLAGS[flag], toks[i + 1] if i + 1 < len(toks) else None, i + 1)


def launch_facts(seen: Mapping[str, str], env: Mapping[str, str], source: str) -> tuple[dict[str, Any], list[str]]:
    """``{"nnodes": N, "nproc_per_node": M}`` (what was read) and notes naming every
    value that is not a plain count. ``seen``: kind -> the last raw value of a launch flag."""
    raw = dict(seen)
    raw.update({_ENV[k]: v for k, v in env.items() if k in _ENV})
    notes, counts = [], {}
    for kind, value in raw.items():
        n = _count(kind, value)
        if n is None:
            notes.append(f"{source}: {_name(kind)} {value} (not one count of {'nodes' if 'node' in kind else 'processes'})")
        counts[kind] = n
    out: dict[str, Any] = {}
    nodes = next((counts[k] for k in _NODES_FROM if counts.get(k)), None)
    nproc = next((counts[k] for k in _NPROC_FROM if counts.get(k) and not (k == "ntasks" and counts[k] == 1)), None)
    if nodes:
        out["nnodes"] = nodes
    if nproc:
        out["nproc_per_node"] = nproc
    return out, notes


def _name(kind: str) -> str:
    names = {"env_nnodes": "NNODES=", "env_nproc": "NPROC_PER_NODE="}
    return names.get(kind) or next(f for f, k in LAUNCH_FLAGS.items() if k == kind)
