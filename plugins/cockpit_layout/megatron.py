"""Megatron-LM arguments as operators hand them over: an argument line, or the
launch script itself (Megatron-LM's examples/*.sh, ms-swift's ``megatron sft``).

Flags are read in both spellings, ``--tensor-model-parallel-size`` and
``--tensor_model_parallel_size`` (ms-swift), as ``--flag value`` or
``--flag=value``; switches may carry ``true``/``false`` (ms-swift style). A
script's backslash continuations are joined, ``#`` comments dropped (also
inline ones, and commented-out flags), and ``NAME=value`` /
``${NAME:-default}`` assignments substituted into flag values. A value that
still holds a shell variable is not guessed: the flag is listed as ignored,
naming the variable. Later occurrences win, as with argparse.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from cockpit.plugins.api import UsageError

from .launch import launch_facts, launch_flag, launcher_of, sbatch_lines
from .spec import LayoutSpec, TP_PP_DP_ORDER, _positive

# Megatron flag -> (field, converter). Converters raise ValueError on junk.
VALUES: dict[str, tuple[str, Any]] = {
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
    "--moe-ffn-hidden-size": ("moe_ffn_hidden", int),
    "--moe-shared-expert-intermediate-size": ("shared_expert_hidden", int),
    "--kv-channels": ("kv_channels", int),
    "--q-lora-rank": ("q_lora_rank", int),
    "--kv-lora-rank": ("kv_lora_rank", int),
    "--qk-head-dim": ("qk_head_dim", int),
    "--qk-pos-emb-head-dim": ("qk_pos_dim", int),
    "--v-head-dim": ("v_head_dim", int),
    "--seq-length": ("seq_length", int),
    "--micro-batch-size": ("micro_batch", int),
    "--global-batch-size": ("global_batch", int),
    "--vocab-size": ("vocab", int),
}
SWITCHES = {
    "--use-tp-pp-dp-mapping": ("order", TP_PP_DP_ORDER),
    "--swiglu": ("swiglu", True),
    "--use-distributed-optimizer": ("distributed_optimizer", True),
    "--recompute-activations": ("recompute", True),
    "--multi-latent-attention": ("mla", True),
    "--untie-embeddings-and-output-weights": ("untied_embeddings", True),
    "--sequence-parallel": ("sequence_parallel", True),
}
# Flags with a value that the check reads through a rule of its own.
SPECIAL = ("--recompute-granularity", "--moe-layer-freq", "--data-parallel-sharding-strategy", "--use-megatron-fsdp")
# Megatron-FSDP sharding strategy -> the ZeRO stage it equals (Megatron-LM megatron_fsdp docs).
FSDP_STAGE = {"no_shard": 0, "optim": 1, "optim_grads": 2, "optim_grads_params": 3}
_VAR = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}|\$(\w+)")
_ASSIGN = re.compile(r"^(?:export\s+)?([A-Za-z_]\w*)=(.*)$")


def _flag(token: str) -> tuple[str, str, str]:
    """(flag in dash spelling, "=" or "", inline value)."""
    flag, eq, inline = token.partition("=")
    return "--" + flag[2:].replace("_", "-"), eq, inline


def _subst(value: str, env: dict[str, str]) -> str:
    def one(m: re.Match) -> str:
        name = m.group(1) or m.group(3)
        if name in env:
            return env[name]
        return m.group(2) if m.group(2) is not None else m.group(0)

    return _VAR.sub(one, value)


def _split(text: str, source: str) -> tuple[list[list[str]], list[str]]:
    """Shell words per statement: the whole text at once (quoted strings may span
    lines), else line by line with the lines that do not split noted."""
    joined = re.sub(r"\\\r?\n", " ", text)
    try:
        return [shlex.split(joined, comments=True)], []
    except ValueError:
        pass
    lines, notes = [], []
    for raw in joined.splitlines():
        try:
            lines.append(shlex.split(raw, comments=True))
        except ValueError as exc:
            notes.append(f"{source}: line {raw.strip()[:60]!r} not split ({exc})")
    if notes and not any(lines):
        raise UsageError(f"cannot split {source} {text.strip()[:60]!r}: {notes[0].split('(')[-1].rstrip(')')}")
    return lines, notes


def tokens(text: str, source: str) -> tuple[list[str], list[str]]:
    """(tokens, notes) of an argument line or script: continuations joined, comments
    dropped, assignments substituted. Raises UsageError when nothing splits."""
    toks, notes, _env = tokens_env(text, source)
    return toks, notes


def tokens_env(text: str, source: str) -> tuple[list[str], list[str], dict[str, str]]:
    """``tokens`` and the ``NAME=value`` assignments seen (substituted)."""
    env: dict[str, str] = {}
    out: list[str] = []
    groups, notes = _split(text, source)
    for toks in groups:
        for tok in toks:
            m = _ASSIGN.match(tok)
            if m and not tok.startswith("-"):
                value = _subst(m.group(2), env)
                if "$(" not in value and value != "(":
                    env[m.group(1)] = value
                continue
            tok = _subst(tok, env)
            # an array item quoted with its value ("--fp8-format hybrid") is two tokens
            out.extend(tok.split() if tok.startswith("--") and " " in tok else [tok])
    return out, notes, env


def _value(tokens_: list[str], i: int, flag: str, source: str) -> tuple[str | None, int]:
    if i + 1 < len(tokens_) and not tokens_[i + 1].startswith("--"):
        return tokens_[i + 1], i + 1
    raise UsageError(f"{flag} in {source} has no value")


def parse_tokens(toks: list[str], source: str, env: dict[str, str] | None = None) -> LayoutSpec:
    """Read the layout-relevant flags and the launch's own (launch.py: torchrun, srun,
    NNODES=/NPROC_PER_NODE= in ``env``); every other flag is listed as ignored."""
    values: dict[str, Any] = {}
    ignored: list[str] = []
    launch: dict[str, str] = {}
    i = 0
    while i < len(toks):
        tok = toks[i]
        found = launch_flag(toks, i) if tok.startswith("-") else None
        if found is not None:
            kind, raw, i = found
            if raw is not None:
                launch[kind] = raw
            i += 1
            continue
        if not tok.startswith("--"):
            i += 1
            continue
        flag, eq, inline = _flag(tok)
        nxt = toks[i + 1].lower() if i + 1 < len(toks) else ""
        if flag in SWITCHES or flag == "--use-megatron-fsdp":
            on = True
            if eq:
                on = inline.lower() not in ("false", "0")
            elif nxt in ("true", "false"):
                on, i = nxt == "true", i + 1
            if on and flag in SWITCHES:
                name, val = SWITCHES[flag]
                values[name] = val
            elif on:
                values["_fsdp"] = True
            i += 1
            continue
        if flag in VALUES or flag in SPECIAL:
            raw, i = (inline, i) if eq else _value(toks, i, flag, source)
            if _VAR.search(raw or ""):
                ignored.append(f"{source}: {flag} {raw} (the shell variable is not set in what was given)")
            elif flag in VALUES:
                name, conv = VALUES[flag]
                values[name] = _positive(conv, raw, flag)
            elif flag == "--moe-layer-freq":
                values["moe_layer_freq"] = raw
            elif flag == "--recompute-granularity":
                values["recompute"] = True
            elif flag == "--data-parallel-sharding-strategy":
                if raw not in FSDP_STAGE:
                    raise UsageError(f"{flag}: {raw!r} is not one of {', '.join(FSDP_STAGE)}")
                values["_fsdp_strategy"] = raw
            i += 1
            continue
        ignored.append(f"{source}: {flag}")
        i += 1
    if values.pop("_fsdp", False):
        # Megatron-FSDP shards like ZeRO by its strategy (default optim_grads_params)
        values["zero_stage"] = FSDP_STAGE[values.pop("_fsdp_strategy", "optim_grads_params")]
    values.pop("_fsdp_strategy", None)
    counts, notes = launch_facts(launch, env or {}, source)
    values.update(counts)
    return LayoutSpec(**values, ignored=tuple(dict.fromkeys(ignored + notes)))


def parse_megatron_args(line: str, source: str = "--megatron-args") -> LayoutSpec:
    """Read the layout-relevant flags of a Megatron-LM argument line.

    Accepts ``--flag value`` and ``--flag=value`` in dash or underscore spelling;
    other flags are listed as ignored. Raises UsageError on a bad number or quoting."""
    return _parse(line, source)


def parse_megatron_script(text: str, source: str = "--megatron-script") -> LayoutSpec:
    """Read a Megatron launch script (see the module docstring), its ``#SBATCH`` lines
    first. Raises UsageError."""
    sbatch = sbatch_lines(text)
    return _parse(sbatch + "\n" + text if sbatch else text, source)


def _parse(text: str, source: str) -> LayoutSpec:
    toks, notes, env = tokens_env(text, source)
    spec = parse_tokens(toks, source, env)
    extra = {"launcher": launcher_of(text)} if launcher_of(text) else {}
    if notes or extra:
        spec = LayoutSpec(**{**_fields(spec), **extra, "ignored": spec.ignored + tuple(notes)})
    return spec


def _fields(spec: LayoutSpec) -> dict[str, Any]:
    from dataclasses import fields

    return {f.name: getattr(spec, f.name) for f in fields(spec)}
