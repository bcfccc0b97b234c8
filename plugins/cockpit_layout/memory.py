"""A rough memory estimate per GPU: weights, gradients, optimizer states, activations.

Mixed-precision Adam as in the ZeRO paper (Rajbhandari et al., 2020): 2 bytes of
bf16 weights, 2 of gradients and 12 of optimizer state (fp32 master weights,
momentum, variance) per parameter. ZeRO stage 1 shards the optimizer state over
DP, stage 2 also the gradients, stage 3 also the weights; Megatron's
``--use-distributed-optimizer`` behaves like stage 1. Activations use the
sequence-parallel estimate of Korthikanti et al. (2022), ``34*s*b*h/t`` bytes
per layer, with the first pipeline stage holding ``pp`` micro-batches in flight
(1F1B), i.e. about ``layers`` layers' worth. Mixture-of-experts models count the
expert FFNs (``--moe-ffn-hidden-size`` wide, in the ``--moe-layer-freq`` layers)
apart from the dense part, and shard them over the expert-parallel groups;
Megatron-FSDP counts as the ZeRO stage of its sharding strategy. It is a
warning aid, not a planner.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .spec import LayoutSpec

GIB = 1024**3


@dataclass(frozen=True, slots=True)
class MemoryEstimate:
    params_total: float
    weights: float
    grads: float
    optimizer: float
    activations: float

    @property
    def total(self) -> float:
        return self.weights + self.grads + self.optimizer + self.activations

    def to_dict(self) -> dict[str, float]:
        g = lambda v: round(v / GIB, 2)  # noqa: E731
        return {
            "params_total": self.params_total,
            "weights_gib": g(self.weights),
            "grads_gib": g(self.grads),
            "optimizer_gib": g(self.optimizer),
            "activations_gib": g(self.activations),
            "total_gib": g(self.total),
        }


def moe_layers(spec: LayoutSpec) -> int:
    """How many layers hold experts: ``--moe-layer-freq`` 1 (all), N (every Nth) or a
    list such as ``[0]*3+[1]*58``; every layer when experts are given without it."""
    layers = spec.layers or 0
    freq = (spec.moe_layer_freq or "1").replace(" ", "")
    if not spec.experts or spec.experts <= 1:
        return 0
    if freq.isdecimal():
        n = int(freq)
        return sum(1 for i in range(layers) if n and i % n == 0)
    ones = 0
    for part in freq.strip("[]").split("+"):
        m = re.fullmatch(r"\[([01](?:,[01])*)\](?:\*(\d+))?", part)
        if m:
            ones += m.group(1).split(",").count("1") * int(m.group(2) or 1)
    return min(ones, layers) or layers


def _attention(spec: LayoutSpec) -> int:
    h = spec.hidden or 0
    if spec.mla and spec.kv_lora_rank and spec.heads:
        # multi-latent attention (DeepSeek-V2/V3): low-rank Q and KV projections
        qk, rope, v, n = spec.qk_head_dim or 128, spec.qk_pos_dim or 64, spec.v_head_dim or 128, spec.heads
        q = h * spec.q_lora_rank + spec.q_lora_rank * n * (qk + rope) if spec.q_lora_rank else h * n * (qk + rope)
        kv = h * (spec.kv_lora_rank + rope) + spec.kv_lora_rank * n * (qk + v)
        return q + kv + n * v * h
    head = spec.kv_channels or (h // spec.heads if spec.heads else h)
    heads = spec.heads or 1
    kv = (spec.query_groups or heads) * head  # grouped-query attention shrinks K and V
    return h * heads * head * 2 + 2 * h * kv


def param_split(spec: LayoutSpec) -> tuple[float, float] | None:
    """(dense parameters, expert parameters), or None when the model size is unknown.

    ``--params`` alone gives no split: it is all counted as dense."""
    if spec.params and not (spec.layers and spec.hidden):
        return float(spec.params), 0.0
    if not (spec.layers and spec.hidden):
        return None
    h, mats = spec.hidden, 3 if spec.swiglu else 2
    dense_mlp = mats * h * (spec.ffn_hidden or 4 * h)
    n_moe = moe_layers(spec)
    expert = mats * h * (spec.moe_ffn_hidden or spec.ffn_hidden or 4 * h)
    shared = mats * h * spec.shared_expert_hidden if spec.shared_expert_hidden else 0
    router = h * (spec.experts or 0)
    dense = spec.layers * _attention(spec) + (spec.layers - n_moe) * dense_mlp + n_moe * (shared + router)
    dense += (spec.vocab or 0) * h * (2 if spec.untied_embeddings else 1)
    experts = n_moe * (spec.experts or 0) * expert
    if spec.params:  # a stated total wins; keep the computed proportions
        scale = spec.params / (dense + experts)
        dense, experts = dense * scale, experts * scale
    return float(dense), float(experts)


def param_count(spec: LayoutSpec) -> float | None:
    """Parameters from ``--params`` or from the model shape; None if unknown."""
    split = param_split(spec)
    return sum(split) if split else None


def estimate(spec: LayoutSpec, tp: int, pp: int, dp: int, cp: int, ep: int = 1, etp: int | None = None) -> MemoryEstimate | None:
    """Bytes per GPU for this split; None when the parameter count is unknown.

    Dense weights are split over TP x PP and sharded (ZeRO stage / Megatron-FSDP /
    distributed optimizer) over DP x CP; expert weights are split over EP x expert-TP
    x PP and sharded over the expert-data-parallel group, (DP x CP x TP) / (EP x ETP)."""
    split = param_split(spec)
    if split is None:
        return None
    dense, experts = split
    etp = etp or tp
    stage = spec.zero_stage if spec.zero_stage is not None else (1 if spec.distributed_optimizer else 0)
    shard = dp * cp  # Megatron's distributed optimizer shards over DP x CP
    edp = max(1, (dp * cp * tp) // max(ep * etp, 1))
    per_dense = dense / (tp * pp)
    per_expert = experts / (max(ep, 1) * etp * pp)

    def sharded(per: float, group: int, level: int) -> float:
        return per / group if stage >= level else per

    weights = 2 * (sharded(per_dense, shard, 3) + sharded(per_expert, edp, 3))
    grads = 2 * (sharded(per_dense, shard, 2) + sharded(per_expert, edp, 2))
    optimizer = 12 * (sharded(per_dense, shard, 1) + sharded(per_expert, edp, 1))
    acts = 0.0
    if spec.seq_length and spec.hidden and spec.layers:
        micro = spec.micro_batch or 1
        per_layer = 34 * spec.seq_length * micro * spec.hidden / (tp * cp)
        if spec.recompute:
            per_layer = 2 * spec.seq_length * micro * spec.hidden / (tp * cp)  # layer inputs only
        acts = per_layer * spec.layers  # (layers/pp) per stage x pp micro-batches in flight
    return MemoryEstimate(dense + experts, weights, grads, optimizer, acts)
