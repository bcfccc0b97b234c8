"""Shared helpers for reading Slurm's JSON dialects (openapi v0.0.37 .. data_parser v0.0.44).

Everything here is pure: no I/O. Every malformed value raises
:class:`cockpit.errors.ParseError` naming the source (``squeue --json`` ...) and
the field. Values Slurm marks as unset or infinite become ``None``.

Dialect differences handled here (see REFERENCE.md section 8):
- numbers are plain ints (<= 22.05) or ``{"set", "infinite", "number"}`` (>= 23.02);
- uint32/uint64 sentinels (NO_VAL, INFINITE) appear as plain ints in old dialects;
- states are a string plus ``state_flags`` (<= 22.05) or a list of strings (>= 23.02).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from cockpit import hostlist
from cockpit.errors import CockpitError, ParseError
from cockpit.models.unread import unread, unread_field

# Slurm's NO_VAL / INFINITE sentinels for 32- and 64-bit fields. Old dialects
# print them as plain ints; they mean "unset" or "unlimited", never a value.
_SENTINELS = frozenset({0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFE, 0xFFFFFFFFFFFFFFFF})


def load_json(data: bytes | str, source: str) -> dict[str, Any]:
    """Decode Slurm's JSON text into its top-level object.

    Raises ParseError when the text is not JSON or not a JSON object, and when
    Slurm itself reported errors in the ``errors`` list without any data.
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(source, f"output is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not isinstance(data, str):
        raise ParseError(source, f"expected text, got {type(data).__name__}")
    if not data.strip():
        raise ParseError(source, "empty output")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ParseError(source, f"not valid JSON ({str(exc)[:120]})") from None
    if not isinstance(doc, dict):
        raise ParseError(source, f"top level is a JSON {type(doc).__name__}, expected an object")
    return doc


def slurm_errors(doc: dict[str, Any]) -> list[str]:
    """The messages in Slurm's own ``errors`` list (each entry a dict or a string)."""
    errs = doc.get("errors")
    if not isinstance(errs, list):
        return []
    out = []
    for err in errs:
        if isinstance(err, dict):
            msg = err.get("description") or err.get("error") or err.get("error_number")
            out.append(str(msg) if msg is not None else json.dumps(err)[:200])
        elif isinstance(err, str):
            out.append(err)
    return out


def records(doc: dict[str, Any], key: str, source: str) -> list[Any]:
    """The list under ``key`` (``jobs``, ``nodes`` ...); an absent key is an error
    unless Slurm reported errors, which then become the message."""
    value = doc.get(key)
    if value is None:
        errs = slurm_errors(doc)
        if errs:
            raise ParseError(source, f"Slurm reported: {errs[0]}")
        raise ParseError(source, f"no {key!r} list in the output")
    if not isinstance(value, list):
        raise ParseError(source, f"{key!r} is a {type(value).__name__}, expected a list")
    return value


def num(value: Any, field: str, source: str) -> int | None:
    """An integer from any dialect; unset, infinite or a NO_VAL sentinel give None.

    Raises ParseError for anything that is not a number.
    """
    t = type(value)
    if t is int:
        return None if value in _SENTINELS else value
    if value is None:
        return None
    if t is dict:
        if value.get("set") is False or value.get("infinite") is True:
            return None
        n = value.get("number")
        if type(n) is int:  # the common case, without a second call
            return None if n in _SENTINELS else n
        return num(n, field, source)
    if t is float:
        if value != value or value in (float("inf"), float("-inf")):
            return None
        if value.is_integer():  # 8.0: a number written as a float
            return int(value)
        # 2.5 is no count, id or time Slurm writes: the record is damaged, never truncated
    elif t is str and value.strip().lstrip("-").isdecimal():
        return int(value)
    raise ParseError(source, f"field {field!r} is not a number: {_short(value)}")


def num0(value: Any, field: str, source: str) -> int:
    """Like :func:`num` but unset becomes 0 (counts such as CPUs or memory)."""
    n = num(value, field, source)
    return 0 if n is None else n


def time_or_none(value: Any, field: str, source: str) -> int | None:
    """An epoch time; 0 (Slurm's "never") and unset become None."""
    n = num(value, field, source)
    return n if n else None


def text(value: Any, field: str, source: str) -> str:
    """A string field; None becomes "". Raises ParseError for non-strings."""
    if type(value) is str:
        return value
    if value is None:
        return ""
    if type(value) in (int, float):
        return str(value)
    raise ParseError(source, f"field {field!r} is not a string: {_short(value)}")


def str_list(value: Any, field: str, source: str) -> tuple[str, ...]:
    """A list of strings, or a comma-separated string (older dialects)."""
    if value is None or value == "":
        return ()
    if type(value) is str:
        return tuple(p for p in value.split(",") if p)
    if type(value) is list:
        out = []
        for item in value:
            if type(item) is not str:
                raise ParseError(source, f"field {field!r} holds a non-string: {_short(item)}")
            out.append(item)
        return tuple(out)
    raise ParseError(source, f"field {field!r} is not a list: {_short(value)}")


# What a record with an unexpected shape raises besides ParseError (a dict where
# a list was expected ...): it costs that record, never the listing.
RECORD_ERRORS = (ParseError, TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError)


def read_each(recs: list[Any], kind: str, source: str, build: Callable[[dict[str, Any]], Any],
              warnings: list[str] | None, name_key: str = "name") -> tuple[Any, ...]:
    """``build`` each record; one that cannot be read becomes a warning naming it
    (:func:`cockpit.models.unread.unread`) and every other record stays.

    Without a ``warnings`` list the first bad record raises ParseError, as
    before: a caller that collects nothing must not lose records silently."""
    out = []
    for i, rec in enumerate(recs):
        try:
            # msgspec Structs (the fast squeue path) answer .get like a dict
            ok = type(rec) is dict or hasattr(rec, "__struct_fields__")
            out.append(build(rec if ok else get_record(rec, kind, i, source)))
        except RECORD_ERRORS as exc:
            if warnings is None:
                if isinstance(exc, ParseError):
                    raise
                raise ParseError(source, f"{kind} #{i}: {why_unread(exc, kind, '')}") from None
            name = record_name(rec, name_key, i)
            warn(warnings, unread(source, kind, name, why_unread(exc, kind, name)))
    return tuple(out)


class Unknowns:
    """The fields of one record that could not be read, said once each.

    ``read(field, build, default)`` gives what ``build()`` returns; when it
    raises one of RECORD_ERRORS the field is named unknown with a warning
    (:func:`cockpit.models.unread.unread_field`) and ``default`` stands in its
    place. Without a ``warnings`` list it raises, as ``read_each`` does: a
    field nobody hears about must not pass for read."""

    def __init__(self, source: str, kind: str, name: str, warnings: list[str] | None) -> None:
        self.source, self.kind, self.name, self.warnings = source, kind, name, warnings
        self.fields: set[str] = set()

    def read(self, field: str, build: Callable[[], Any], default: Any) -> Any:
        try:
            return build()
        except RECORD_ERRORS as exc:
            if self.warnings is None:
                raise
            self.fields.add(field)
            why = why_unread(exc, self.kind, self.name)
            warn(self.warnings, unread_field(self.source, self.kind, self.name, field, why))
            return default

    def frozen(self) -> frozenset[str]:
        return frozenset(self.fields)


def record_name(rec: Any, key: str, index: int) -> str:
    """The record's name or id for a warning; ``#index`` (from 1) when it has none."""
    value = rec.get(key) if type(rec) is dict or hasattr(rec, "__struct_fields__") else None
    if type(value) is dict:  # {"set": true, "number": 42}: only a number is an id there
        value = value.get("number")
        value = value if type(value) is int else None
    text = str(value).strip() if type(value) in (str, int) else ""
    # a name with a blank in it is no Slurm name (and would not be counted as one)
    return text[:80] if text and not any(c.isspace() for c in text) else f"#{index + 1}"


def why_unread(exc: BaseException, kind: str, name: str) -> str:
    """What was wrong, without the source and "node X: " the readers put in front."""
    if isinstance(exc, ParseError):
        why = exc.detail
        for prefix in (f"{kind} {name}: ", f"{kind} {name} "):
            if name and why.startswith(prefix):
                why = why[len(prefix):]
        return why
    return f"unexpected shape ({type(exc).__name__}: {str(exc)[:80]})"


def get_record(rec: Any, what: str, index: int, source: str) -> dict[str, Any]:
    """Check that one element of a records list is an object."""
    if type(rec) is not dict:
        raise ParseError(source, f"{what} #{index} is a {type(rec).__name__}, expected an object")
    return rec


_HOSTLIST_CHARS = frozenset("@!&^")
_HOSTLIST_CACHE: dict[str, tuple[str, ...]] = {}


def expand_nodes(value: Any, field: str, source: str) -> tuple[str, ...]:
    """Expand a hostlist (``node[01-04]``) or a list of names, with a cache.

    A cluster has a few thousand distinct node lists but 100k jobs share them,
    so expansion is cached by string. Raises ParseError for a bad hostlist.
    """
    if type(value) is list:
        return str_list(value, field, source)
    s = text(value, field, source)
    if not s:
        return ()
    hit = _HOSTLIST_CACHE.get(s)
    if hit is not None:
        return hit
    if not _HOSTLIST_CHARS.isdisjoint(s):
        # NodeSet would read these as group (@) or set operators (! & ^) and may
        # consult external group resolvers: a Slurm hostlist never has them.
        raise ParseError(source, f"field {field!r}: {s[:80]!r} is not a Slurm hostlist")
    if "[" in s:
        _check_range_sizes(s, field, source)
    try:
        names = hostlist.expand(s)
    except CockpitError as exc:
        raise ParseError(source, f"field {field!r}: {exc}") from None
    except Exception as exc:  # ClusterShell raises assorted errors on odd input
        raise ParseError(source, f"field {field!r}: bad hostlist {s!r} ({type(exc).__name__})") from None
    if len(_HOSTLIST_CACHE) > 50_000:
        _HOSTLIST_CACHE.clear()
    _HOSTLIST_CACHE[s] = names
    return names


_RANGE = re.compile(r"(\d+)-(\d+)")
_MAX_RANGE = 1_000_000


def _check_range_sizes(s: str, field: str, source: str) -> None:
    # NodeSet materialises every name: a corrupt "n[0-999999999]" would eat
    # the machine's memory, so refuse absurd ranges before expanding.
    for lo, hi in _RANGE.findall(s):
        if len(hi) > 9 or int(hi) - int(lo) > _MAX_RANGE:
            raise ParseError(source, f"field {field!r}: hostlist range {lo}-{hi} is too large")


def warn(warnings: list[str] | None, message: str) -> None:
    """Append a warning once (callers pass None when they do not collect them)."""
    if warnings is not None and message not in warnings:
        warnings.append(message)


def _short(value: Any) -> str:
    r = repr(value)
    return r if len(r) <= 80 else r[:77] + "..."
