"""What the job asks for: parallel sizes, rank order, batch numbers, model facts.

Pure parsing, no I/O: DeepSpeed config dicts (here), Megatron argument lines
and launch scripts (:mod:`cockpit_layout.megatron`), and the merge of explicit
flags with both. Every bad value raises UsageError naming it; what a source
says that the check does not use is kept in ``LayoutSpec.ignored``.
"""

from __future__ import annotations

import re
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
    etp: int | None = None  # expert tensor parallel size; not given: the launcher's default (expert_tp)
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
    # MoE and attention shapes the memory estimate needs (Megatron names)
    moe_ffn_hidden: int | None = None  # --moe-ffn-hidden-size: one expert's FFN width
    moe_layer_freq: str | None = None  # --moe-layer-freq: 1 (every layer), N, or a list such as [0]*3+[1]*58
    shared_expert_hidden: int | None = None  # --moe-shared-expert-intermediate-size
    kv_channels: int | None = None  # --kv-channels (head dim)
    mla: bool = False  # --multi-latent-attention
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_head_dim: int | None = None
    qk_pos_dim: int | None = None
    v_head_dim: int | None = None
    untied_embeddings: bool = False  # --untie-embeddings-and-output-weights: input and output tables both count
    sequence_parallel: bool = False  # Megatron --sequence-parallel: activations split over TP (the estimate assumes it)
    # the launch itself: which launcher (its defaults differ) and the nodes x processes it starts
    launcher: str | None = None  # "ms-swift" (megatron sft/pt/rlhf), "megatron-lm"; None: not said
    nnodes: int | None = None  # torchrun --nnodes, NNODES=, srun/#SBATCH --nodes
    nproc_per_node: int | None = None  # torchrun --nproc-per-node, NPROC_PER_NODE=, --ntasks-per-node, --gpus-per-node
    # what the sources said that the check did not use: "<source>: <key> (why)"; merged by concatenation
    ignored: tuple[str, ...] = ()


def _positive(conv: Any, raw: Any, what: str) -> Any:
    try:
        value = conv(raw)
    except (TypeError, ValueError):
        raise UsageError(f"{what}: {raw!r} is not a number") from None
    if isinstance(value, bool) or value <= 0:
        raise UsageError(f"{what}: {raw!r} must be a positive number")
    return value


_DS_READ = {
    "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "zero_optimization.stage",
    "pipeline.stages", "tensor_parallel.autotp_size", "tensor_parallel.tp_size", "expert_parallel.autoep_size",
    "expert_parallel.enabled", "sequence_parallel_size",
}


def _leaves(cfg: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for k, v in cfg.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out += _leaves(v, key + ".")
        else:
            out.append((key, v))
    return out


def parse_deepspeed_config(cfg: Mapping[str, Any], source: str = "DeepSpeed config") -> LayoutSpec:
    """Read batch numbers, ZeRO stage, the pipeline section and the parallel sizes
    (``tensor_parallel.autotp_size``/``tp_size``, ``expert_parallel.autoep_size``,
    ``sequence_parallel_size``) of a DeepSpeed config.

    ``"auto"`` values (HF Accelerate/Trainer style) count as not given and are
    listed as ignored, as is every key the check does not read.
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

    def sub(key: str) -> Mapping[str, Any]:
        v = cfg.get(key) or {}
        if not isinstance(v, Mapping):
            raise UsageError(f"{source}: {key} must be an object")
        return v

    zero, tpc, epc = sub("zero_optimization"), sub("tensor_parallel"), sub("expert_parallel")
    pipe = cfg.get("pipeline")
    stages = num("pipeline.stages", pipe.get("stages")) if isinstance(pipe, Mapping) else None
    zero_stage = num("zero_optimization.stage", zero.get("stage"), allow_zero=True)
    if zero_stage is not None and zero_stage > 3:
        raise UsageError(f"{source}: zero_optimization.stage = {zero_stage} (0-3 exist)")
    # autotp_size 0 disables AutoTP (DeepSpeed config-json.md); tp_size is the inference config's name
    tp = num("tensor_parallel.autotp_size", tpc.get("autotp_size"), allow_zero=True) or \
        num("tensor_parallel.tp_size", tpc.get("tp_size"))
    ep = num("expert_parallel.autoep_size", epc.get("autoep_size")) if epc.get("enabled", True) is not False else None
    ignored = [f"{source}: {k} = auto (set by the launcher, not checked)" for k, v in _leaves(cfg) if v == "auto"]
    ignored += [f"{source}: {k}" for k, v in _leaves(cfg) if k not in _DS_READ and v != "auto"]
    return LayoutSpec(
        global_batch=num("train_batch_size", cfg.get("train_batch_size")),
        micro_batch=num("train_micro_batch_size_per_gpu", cfg.get("train_micro_batch_size_per_gpu")),
        grad_accum=num("gradient_accumulation_steps", cfg.get("gradient_accumulation_steps")),
        zero_stage=zero_stage,
        pp=stages,
        pipeline_engine=isinstance(pipe, Mapping),
        tp=tp or None,
        ep=ep,
        cp=num("sequence_parallel_size", cfg.get("sequence_parallel_size")),
        ignored=tuple(ignored),
    )


def merge(*specs: tuple[str, LayoutSpec]) -> LayoutSpec:
    """Merge specs from several sources; the same field given twice must agree.

    Each item is (source name, spec). Raises UsageError naming both sources on
    a conflict (``--tp 4`` against ``--tensor-model-parallel-size 2``).
    """
    out: dict[str, Any] = {}
    origin: dict[str, str] = {}
    ignored: list[str] = []
    for source, spec in specs:
        ignored += spec.ignored
        for f in fields(LayoutSpec):
            if f.name == "ignored":
                continue
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
    return LayoutSpec(**out, ignored=tuple(ignored))


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


# Expert TP when the launch does not say: Megatron-LM sets it to TP
# (megatron/training/arguments.py: "if args.expert_tensor_parallel_size is None:
# args.expert_tensor_parallel_size = args.tensor_model_parallel_size"), ms-swift's
# MegatronArguments declares ``expert_tensor_parallel_size: int = 1``. A TP2/EP8 launch of
# ms-swift on 8 GPUs has expert groups of 1 x 8 GPUs, not 2 x 8 (docs/verdicts.md).
LAUNCHER_ETP_DEFAULT = {"ms-swift": 1}


def expert_tp(spec: LayoutSpec, tp: int) -> int:
    """The expert TP size the launch runs with: as given, else its launcher's default (TP)."""
    if spec.etp:
        return spec.etp
    return LAUNCHER_ETP_DEFAULT.get(spec.launcher or "", tp)


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


from .megatron import parse_megatron_args, parse_megatron_script  # noqa: E402, F401  (re-exported: the check's inputs)
