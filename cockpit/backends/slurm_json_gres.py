"""GRES strings as Slurm prints them, reduced to GPUs.

Forms (from Slurm's gres code, ``gres_stepmgr_job_build_details`` and
``gres_node_state`` printing, and the recorded fixtures):

- node ``gres``:       ``gpu:h100:8(S:0-1)``, ``gpu:h100:2,gpu:h200:4``, ``gpu:8``
- node ``gres_used``:  ``gpu:h100:3(IDX:0-2)``, ``gpu:h100:0(IDX:N/A)``, ``gpu:0``,
  untyped GPUs since 22.05: ``gpu:(null):8(IDX:0-7)`` (the type printed as ``(null)``)
- MIG profiles as types: ``gpu:1g.10gb:7``, ``gpu:nvidia_h100_80gb_hbm3_1g.10gb:6``;
  sharing GRES next to the GPUs: ``gpu:4(S:0-1),shard:16(S:0-1)``, ``mps:200``,
  in use ``shard:A100_80GB:0(0/80,0/80)`` (in use, then in use/total per GPU)
- job ``gres_detail``: ``gpu:h100:2(IDX:0-1)``, ``gpu:2(IDX:0,3)``,
  ``gpu:h100(CNT:2)`` (count without a bitmap), shared GRES ``shard:4(2/4,2/4)``
- ``tres_per_node`` / ``tres_per_job``: ``gres/gpu:h100:2``, ``gres:gpu:2``, ``gpu:2``

Items are comma separated, but commas also occur inside the parentheses, so the
split is parenthesis-aware. Parsed strings are cached: 100k jobs repeat a few
hundred distinct GRES strings.
"""

from __future__ import annotations

from dataclasses import dataclass

from cockpit.errors import ParseError

_SUFFIX = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}


@dataclass(frozen=True, slots=True)
class GresItem:
    """One GRES entry: ``name[:type]:count(IDX:...)``. ``indexes`` is None when
    the string carries no index list (counts only)."""

    name: str
    type: str | None
    count: int | None
    indexes: tuple[int, ...] | None


def split_items(s: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    if "(" not in s:
        return [p for p in s.split(",") if p]
    out: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(s):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            if i > start:
                out.append(s[start:i])
            start = i + 1
    if s[start:]:
        out.append(s[start:])
    return out


def parse_index_list(s: str, source: str) -> tuple[int, ...]:
    """``0-2,5`` -> (0, 1, 2, 5); ``N/A`` or empty -> (). Raises ParseError."""
    s = s.strip()
    if not s or s == "N/A":
        return ()
    out: list[int] = []
    for part in s.split(","):
        lo, sep, hi = part.partition("-")
        if not lo.isdecimal() or (sep and not hi.isdecimal()):
            raise ParseError(source, f"bad GPU index list {s!r}")
        a = int(lo)
        b = int(hi) if sep else a
        if b < a or b - a > 4096:
            raise ParseError(source, f"bad GPU index range {part!r}")
        out.extend(range(a, b + 1))
    return tuple(out)


def _count(s: str, item: str, source: str) -> int:
    if s.isdecimal():
        return int(s)
    if s[:-1].isdecimal() and s[-1:].upper() in _SUFFIX:
        return int(s[:-1]) * _SUFFIX[s[-1:].upper()]
    raise ParseError(source, f"bad GRES count {s!r} in {item!r}")


def parse_item(item: str, source: str) -> GresItem:
    """Parse one GRES entry (see the module docstring). Raises ParseError."""
    shown = item  # errors name the string as Slurm printed it
    if "(null)" in item:
        # Slurm prints an untyped GPU's type as "(null)" in gres_used
        # (gpu:(null):8(IDX:0-7)): no type, not a parenthesised detail.
        item = item.replace(":(null):", "::").replace(":(null)", ":")
    cut = item.find("(")
    head, rest = (item, "") if cut < 0 else (item[:cut], item[cut:])
    count: int | None = None
    indexes: tuple[int, ...] | None = None
    while rest:
        close = rest.find(")")
        if not rest.startswith("(") or close < 0:
            raise ParseError(source, f"bad parentheses in GRES {shown!r}")
        key, colon, val = rest[1:close].partition(":")
        if colon and key == "IDX":
            indexes = parse_index_list(val, source)
        elif colon and key == "CNT":
            count = _count(val, shown, source)
        rest = rest[close + 1 :]
    parts = head.strip().split(":")
    name = parts[0]
    if not name:
        raise ParseError(source, f"GRES entry without a name: {shown!r}")
    gtype: str | None = None
    if len(parts) == 2:
        # "gpu:2" (count) or "gpu:h100" (type; count given by CNT or implied)
        if parts[1][:1].isdecimal():
            count = _count(parts[1], shown, source)
        else:
            gtype = parts[1] or None
    elif len(parts) >= 3:
        gtype = ":".join(parts[1:-1]) or None
        count = _count(parts[-1], shown, source)
    return GresItem(name, gtype, count, indexes)


_CACHE: dict[str, tuple[GresItem, ...]] = {}


def gpu_items(s: str, source: str) -> tuple[GresItem, ...]:
    """The ``gpu`` entries of a GRES string, cached by string.

    Other GRES (shard, mps, licences with odd counts) are skipped unparsed, so a
    site's exotic GRES never breaks the GPU view. Raises ParseError for a
    malformed gpu entry.
    """
    hit = _CACHE.get(s)
    if hit is not None:
        return hit
    if s in ("", "N/A", "(null)"):
        items: tuple[GresItem, ...] = ()
    else:
        items = tuple(
            parse_item(p, source) for p in split_items(s) if _name_of(p) == "gpu"
        )
    if len(_CACHE) > 20_000:
        _CACHE.clear()
    _CACHE[s] = items
    return items


SHARING = ("shard", "mps")  # GRES that share GPUs (Slurm's gres.html: MPS Management, Sharding)
_SHARE_CACHE: dict[str, tuple[GresItem, ...]] = {}


def sharing_items(s: str, source: str) -> tuple[GresItem, ...]:
    """The ``shard`` and ``mps`` entries of a GRES string, cached by string.

    ``shard:A100_80GB:640(S:0-1)`` (gres) and ``shard:A100_80GB:0(0/80,0/80)``
    (gres_used: in use, then in use/total per GPU, tests/data/slurm-gres/frida-*):
    the count before the parentheses is what counts. Raises ParseError for a
    malformed entry."""
    hit = _SHARE_CACHE.get(s)
    if hit is not None:
        return hit
    items = () if s in ("", "N/A", "(null)") else tuple(
        parse_item(p, source) for p in split_items(s) if _name_of(p) in SHARING)
    if len(_SHARE_CACHE) > 20_000:
        _SHARE_CACHE.clear()
    _SHARE_CACHE[s] = items
    return items


def _name_of(item: str) -> str:
    return item.split(":", 1)[0].split("(", 1)[0].strip()


def tres_gpus(s: str, source: str) -> tuple[int, str | None]:
    """GPUs asked in a TRES-per-X string: (count, type or None if mixed/absent).

    Accepts ``gres/gpu:h100:2``, ``gres:gpu:2``, ``gpu:2``, ``gres/gpu=2`` and
    comma lists of them. Raises ParseError for a malformed gpu entry.
    """
    if not s:
        return 0, None
    hit = _TRES_CACHE.get(s)
    if hit is None:
        hit = _tres_gpus(s, source)
        if len(_TRES_CACHE) > 20_000:
            _TRES_CACHE.clear()
        _TRES_CACHE[s] = hit
    return hit


_TRES_CACHE: dict[str, tuple[int, str | None]] = {}


def _tres_gpus(s: str, source: str) -> tuple[int, str | None]:
    total = 0
    types: set[str | None] = set()
    for raw in s.split(","):
        entry = raw.strip()
        for prefix in ("gres/", "gres:"):
            if entry.startswith(prefix):
                entry = entry[len(prefix):]
                break
        entry = entry.replace("=", ":")
        if entry != "gpu" and not entry.startswith("gpu:"):
            continue
        parts = entry.split(":")
        if len(parts) == 1:
            count, gtype = 1, None
        elif len(parts) == 2:
            if parts[1][:1].isdecimal():
                count, gtype = _count(parts[1], raw, source), None
            else:
                count, gtype = 1, parts[1]
        else:
            count, gtype = _count(parts[-1], raw, source), ":".join(parts[1:-1]) or None
        total += count
        types.add(gtype)
    gtype_out = next(iter(types)) if len(types) == 1 else None
    return total, gtype_out
