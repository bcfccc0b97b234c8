"""A rough memory estimate per GPU: weights, gradients, optimizer states, activations.

Mixed-precision Adam as in the ZeRO paper (Rajbhandari et al., 2020): 2 bytes of
bf16 weights, 2 of gradients and 12 of optimizer state (fp32 master weights,
momentum, variance) per parameter. ZeRO stage 1 shards the optimizer state over
DP, stage 2 also the gradients, stage 3 also the weights; Megatron's
``--use-distributed-optimizer`` behaves like stage 1. Activations use the
sequence-parallel estimate of Korthikanti et al. (2022), ``34*s*b*h/t`` bytes
per layer, with the first pipeline stage holding ``pp`` micro-batches in flight
(1F1B), i.e. about ``layers`` layers' worth. It is a warning aid, not a planner.
"""

from __future__ import annotations

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


def param_count(spec: LayoutSpec) -> float | None:
    """Parameters from ``--params`` or from layers x hidden size; None if unknown."""
    if spec.params:
        return spec.params
    if not (spec.layers and spec.hidden):
        return None
    h = spec.hidden
    ffn = spec.ffn_hidden or 4 * h
    kv = h
    if spec.heads and spec.query_groups:
        kv = h * spec.query_groups // spec.heads  # grouped-query attention shrinks K and V
    attn = 2 * h * h + 2 * h * kv
    mlp = (3 if spec.swiglu else 2) * h * ffn
    experts = spec.experts or 1
    embed = (spec.vocab or 0) * h
    return float(spec.layers * (attn + mlp * experts) + embed)


def estimate(spec: LayoutSpec, tp: int, pp: int, dp: int, cp: int, ep: int = 1) -> MemoryEstimate | None:
    """Bytes per GPU for this split; None when the parameter count is unknown."""
    total = param_count(spec)
    if total is None:
        return None
    # Experts are sharded over EP on top of TP x PP; dense weights only over TP x PP.
    experts = spec.experts or 1
    if experts > 1 and spec.layers and spec.hidden:
        mlp_share = (total - (spec.vocab or 0) * spec.hidden) * 0.66
        per_rank = (total - mlp_share) / (tp * pp) + mlp_share / (tp * pp * max(ep, 1))
    else:
        per_rank = total / (tp * pp)
    stage = spec.zero_stage or (1 if spec.distributed_optimizer else 0)
    shard = dp * cp  # Megatron's distributed optimizer shards over DP x CP
    weights = 2 * per_rank / (shard if stage >= 3 else 1)
    grads = 2 * per_rank / (shard if stage >= 2 else 1)
    optimizer = 12 * per_rank / (shard if stage >= 1 else 1)
    acts = 0.0
    if spec.seq_length and spec.hidden and spec.layers:
        micro = spec.micro_batch or 1
        per_layer = 34 * spec.seq_length * micro * spec.hidden / (tp * cp)
        if spec.recompute:
            per_layer = 2 * spec.seq_length * micro * spec.hidden / (tp * cp)  # layer inputs only
        acts = per_layer * spec.layers  # (layers/pp) per stage x pp micro-batches in flight
    return MemoryEstimate(total, weights, grads, optimizer, acts)
