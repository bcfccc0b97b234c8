"""What the job asks for: parallel sizes, rank order, batch numbers, model facts.

Pure parsing, no I/O: Megatron argument lines (shlex), DeepSpeed config dicts,
and the merge of explicit flags with both. Every bad value raises UsageError
naming it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from cockpit.plugins.api import UsageError

AXES = ("tp", "cp", "ep", "dp", "pp")
DEFAULT_ORDER = "tp-cp-ep-dp-pp"  # Megatron-Core initialize_model_parallel default
TP_PP_DP_ORDER = "tp-cp-ep-pp-dp"  # Megatron with --use-tp-pp-dp-mapping


@dataclass(frozen=True, slots=True)
class LayoutSpec:
    """Everything the job's launch line says. None means "not given"."""

    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    cp: int | None = None
    ep: int | None = None
    etp: int | None = None  # expert tensor parallel size (Megatron default: tp)
    order: str | None = None
    layers: int | None = None
    heads: int | None = None
    query_groups: int | None = None
    hidden: int | None = None
    ffn_hidden: int | None = None
    swiglu: bool = False
    experts: int | None = None
    params: float | None = None  # total parameters
    vocab: int | None = None
    seq_length: int | None = None
    micro_batch: int | None = None
    global_batch: int | None = None
    grad_accum: int | None = None
    zero_stage: int | None = None
    distributed_optimizer: bool = False
    recompute: bool = False
    pipeline_engine: bool = False  # DeepSpeed pipeline section present


# Megatron flag -> (field, converter). Converters raise ValueError on junk.
_MEGATRON_VALUES: dict[str, tuple[str, Any]] = {
    "--tensor-model-parallel-size": ("tp", int),
    "--pipeline-model-parallel-size": ("pp", int),
    "--context-parallel-size": ("cp", int),
    "--expert-model-parallel-size": ("ep", int),
    "--expert-tensor-parallel-size": ("etp", int),
    "--num-layers": ("layers", int),
    "--num-attention-heads": ("heads", int),
    "--num-query-groups": ("query_groups", int),
    "--hidden-size": ("hidden", int),
    "--ffn-hidden-size": ("ffn_hidden", int),
    "--num-experts": ("experts", int),
    "--seq-length": ("seq_length", int),
    "--micro-batch-size": ("micro_batch", int),
    "--global-batch-size": ("global_batch", int),
    "--vocab-size": ("vocab", int),
}
_MEGATRON_SWITCHES = {
    "--use-tp-pp-dp-mapping": ("order", TP_PP_DP_ORDER),
    "--swiglu": ("swiglu", True),
    "--use-distributed-optimizer": ("distributed_optimizer", True),
    "--recompute-activations": ("recompute", True),
}


def parse_megatron_args(line: str) -> LayoutSpec:
    """Read the layout-relevant flags of a Megatron-LM argument line.

    Accepts ``--flag value`` and ``--flag=value``; unknown flags are ignored
    (a real line has dozens). Raises UsageError on a bad number or quoting.
    """
    try:
        tokens = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"cannot split --megatron-args {line!r}: {exc}") from None
    values: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        flag, eq, inline = tokens[i].partition("=")
        if flag in _MEGATRON_VALUES:
            name, conv = _MEGATRON_VALUES[flag]
            if eq:
                raw = inline
            elif i + 1 < len(tokens):
                raw = tokens[i + 1]
                i += 1
            else:
                raise UsageError(f"{flag} in --megatron-args has no value")
            values[name] = _positive(conv, raw, flag)
        elif flag in _MEGATRON_SWITCHES:
            name, val = _MEGATRON_SWITCHES[flag]
            values[name] = val
        elif flag == "--recompute-granularity" and i + 1 < len(tokens):
            values["recompute"] = True
            i += 1
        i += 1
    return LayoutSpec(**values)


def _positive(conv: Any, raw: Any, what: str) -> Any:
    try:
        value = conv(raw)
    except (TypeError, ValueError):
        raise UsageError(f"{what}: {raw!r} is not a number") from None
    if isinstance(value, bool) or value <= 0:
        raise UsageError(f"{what}: {raw!r} must be a positive number")
    return value


def parse_deepspeed_config(cfg: Mapping[str, Any], source: str = "DeepSpeed config") -> LayoutSpec:
    """Read batch numbers, ZeRO stage and the pipeline section of a DeepSpeed config.

    ``"auto"`` values (HF Accelerate/Trainer style) count as not given.
    Raises UsageError naming the key when a value is not a positive integer.
    """
    if not isinstance(cfg, Mapping):
        raise UsageError(f"{source}: expected a JSON object at the top level")

    def num(key: str, value: Any, allow_zero: bool = False) -> int | None:
        if value is None or value == "auto":
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
            raise UsageError(f"{source}: {key} = {value!r} is not a valid count")
        return value

    zero = cfg.get("zero_optimization") or {}
    if not isinstance(zero, Mapping):
        raise UsageError(f"{source}: zero_optimization must be an object")
    pipe = cfg.get("pipeline")
    stages = None
    if isinstance(pipe, Mapping):
        stages = num("pipeline.stages", pipe.get("stages"))
    zero_stage = num("zero_optimization.stage", zero.get("stage"), allow_zero=True)
    if zero_stage is not None and zero_stage > 3:
        raise UsageError(f"{source}: zero_optimization.stage = {zero_stage} (0-3 exist)")
    return LayoutSpec(
        global_batch=num("train_batch_size", cfg.get("train_batch_size")),
        micro_batch=num("train_micro_batch_size_per_gpu", cfg.get("train_micro_batch_size_per_gpu")),
        grad_accum=num("gradient_accumulation_steps", cfg.get("gradient_accumulation_steps")),
        zero_stage=zero_stage,
        pp=stages,
        pipeline_engine=isinstance(pipe, Mapping),
    )


def merge(*specs: tuple[str, LayoutSpec]) -> LayoutSpec:
    """Merge specs from several sources; the same field given twice must agree.

    Each item is (source name, spec). Raises UsageError naming both sources on
    a conflict (``--tp 4`` against ``--tensor-model-parallel-size 2``).
    """
    out: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for source, spec in specs:
        for f in fields(LayoutSpec):
            value = getattr(spec, f.name)
            if value is None or value is False:
                continue
            if f.name in out and out[f.name] != value:
                raise UsageError(
                    f"{f.name} = {value!r} from {source} conflicts with "
                    f"{out[f.name]!r} from {origin[f.name]}"
                )
            out[f.name] = value
            origin[f.name] = source
    return LayoutSpec(**out)


def normalise_order(order: str | None) -> tuple[str, ...]:
    """``"tp-cp-ep-dp-pp"`` -> tuple of axes, missing axes appended (as Megatron does).

    Raises UsageError on an unknown or repeated axis.
    """
    tokens = [t for t in re.split(r"[-,\s]+", (order or DEFAULT_ORDER).lower()) if t]
    for tok in tokens:
        if tok not in AXES:
            raise UsageError(f"rank order {order!r}: unknown axis {tok!r} (use {'-'.join(AXES)})")
    if len(set(tokens)) != len(tokens):
        raise UsageError(f"rank order {order!r} names an axis twice")
    return tuple(tokens) + tuple(a for a in AXES if a not in tokens)


def parse_params(text: str) -> float:
    """``"70B"``, ``"7e9"``, ``"350M"`` -> parameter count. Raises UsageError."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([kKmMbBtT]?)\s*", str(text))
    if not m:
        raise UsageError(f"--params {text!r}: expected a count such as 70B or 7e9")
    scale = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}[m.group(2).lower()]
    value = float(m.group(1)) * scale
    if value <= 0:
        raise UsageError(f"--params {text!r} must be positive")
    return value


def with_defaults(spec: LayoutSpec) -> LayoutSpec:
    """Fill the sizes a framework defaults to 1 (dp stays None: derived later)."""
    return replace(
        spec,
        tp=spec.tp or 1,
        pp=spec.pp or 1,
        cp=spec.cp or 1,
        ep=spec.ep or 1,
        order=spec.order or DEFAULT_ORDER,
    )
