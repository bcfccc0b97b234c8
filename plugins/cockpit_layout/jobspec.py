"""The layout a job's own launch line asks for: its batch script (``scontrol write
batch_script ID -``, read-only) or, for a job started without one, its command line,
read as a Megatron launch script (TP, PP, CP, EP, expert TP, the launcher, its counts).

The TUI's form used to pre-fill PP = 1 for a job whose argv says
``--pipeline-model-parallel-size 4``; the form and ``check layout --job`` now start from
what the job itself says. What the command line (or the form) gives still wins.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from cockpit.plugins.api import CheckContext, CockpitError, Job, UsageError

from .spec import LayoutSpec, parse_megatron_script  # through spec: megatron imports spec

SCRIPT_TIMEOUT_S = 10.0
_FORM_AXES = ("tp", "pp", "dp", "cp", "ep", "etp")


async def job_launch_spec(ctx: CheckContext, job: Job) -> tuple[LayoutSpec | None, str]:
    """(spec, where it came from) or (None, why nothing was read). Never raises."""
    where = f"job {job.display_id}'s batch script"
    try:
        out = await ctx.probes.on_slurm_host(["scontrol", "write", "batch_script", str(job.job_id), "-"],
                                             timeout=SCRIPT_TIMEOUT_S)
        text, why = (out.text, "") if out.ok else ("", out.error)
    except CockpitError as exc:
        text, why = "", str(exc)
    if not text.strip() and job.command and not job.command.startswith("/"):
        text, where = job.command, f"job {job.display_id}'s command line"  # srun/salloc: the argv itself
    if not text.strip():
        return None, f"{where} not read ({why or 'none'})"
    try:
        return parse_megatron_script(text, where), where
    except UsageError as exc:
        return None, f"{where} not read: {exc}"


def fill_from_job(spec: LayoutSpec, job_spec: LayoutSpec | None, where: str) -> LayoutSpec:
    """``spec`` (flags, files) with the gaps filled from the job's own launch line; where
    both say and differ, the flag wins and the job's value is listed as not used."""
    if job_spec is None:
        return replace(spec, ignored=spec.ignored + (where,))
    filled: dict[str, Any] = {}
    notes: list[str] = []
    for f in fields(LayoutSpec):
        if f.name == "ignored":
            continue
        mine, theirs = getattr(spec, f.name), getattr(job_spec, f.name)
        if theirs is None or theirs is False:
            continue
        if mine is None or mine is False:
            filled[f.name] = theirs
        elif mine != theirs:
            notes.append(f"{where}: {f.name} {theirs} (the given {mine} was used)")
    return replace(spec, **filled, ignored=spec.ignored + job_spec.ignored + tuple(notes))


async def form_prefill(ctx: CheckContext, job: Job) -> dict[str, Any]:
    """The TUI form's starting values for ``job``: the sizes its launch line gives, else
    TP = its GPUs per node and PP = 1 (DP is derived when left empty)."""
    gpn = max((g.count for g in job.gpus), default=0) or (job.gpus_per_node or 0)
    values: dict[str, Any] = {"tp": gpn or "", "pp": 1, "dp": ""}
    spec, _where = await job_launch_spec(ctx, job)
    if spec is not None and (spec.tp or spec.pp):
        values = {"tp": spec.tp or 1, "pp": spec.pp or 1, "dp": spec.dp or ""}
        values.update({a: getattr(spec, a) for a in _FORM_AXES[3:] if getattr(spec, a)})
    return values
