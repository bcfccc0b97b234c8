"""Filter and sort rows of any table, without Textual.

A filter is what an operator types after ``/``::

    gpu drain                 plain words: every word must appear somewhere in the row
    state:drain user:alice    field terms: the field's text contains the value (case-insensitive)
    state:drain,down          a comma means "any of"
    state:PD  state:R,CG      Slurm's short state codes (squeue %t, sinfo %t) mean their state
    -state:idle  state!=idle  negation
    gpus>0  mem>=512 time<60  numeric comparisons (>, >=, <, <=, =, !=)

Rows are plain tuples of values (one per column, ``None`` for missing) plus a
lower-cased "haystack" string for the plain words. ``compile_query`` turns the
text into one predicate, so filtering 100k rows costs one call per row.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cockpit.errors import UsageError
from cockpit.models.cluster import JOB_STATES, NODE_BASE_STATES, NODE_FLAGS

_TERM = re.compile(r"^(?P<neg>-)?(?P<field>[A-Za-z_][\w.]*)(?P<op>:|!=|>=|<=|=|>|<)(?P<value>.*)$")
_NUMERIC_OPS = (">", ">=", "<", "<=")

Predicate = Callable[[Sequence[Any], str], bool]

# squeue's compact job state codes and sinfo's node state abbreviations that are not
# already a part of the state's word ("mix" is in "mixed", "drng" is not in "draining").
STATE_CODES = {
    "pd": "pending", "r": "running", "cg": "completing", "cd": "completed", "ca": "cancelled",
    "f": "failed", "to": "timeout", "nf": "node_fail", "pr": "preempted", "s": "suspended",
    "st": "stopped", "bf": "boot_fail", "dl": "deadline", "oom": "out_of_memory", "rq": "requeued",
    "rh": "requeue_hold", "rs": "resizing", "rv": "revoked", "se": "special_exit", "so": "stage_out",
    "cf": "configuring", "rd": "resv_del_hold", "si": "signaling",
    "drng": "draining", "futr": "future", "resv": "reserved", "inval": "invalid", "plnd": "planned",
    "npc": "not_responding",
}


# sinfo's node state abbreviations (sinfo(1) "NODE STATE CODES") -> cockpit's node words.
NODE_CODES = {
    "alloc": "allocated", "mix": "mixed", "comp": "completing", "drng": "draining", "futr": "future",
    "unk": "unknown", "resv": "reserved", "npc": "not_responding", "plnd": "planned", "inval": "invalid",
    "failg": "fail", "pow_dn": "powered_down", "pow_up": "powering_up",
}
# squeue's job state codes (squeue(1) "JOB STATE CODES") that name a state or a flag cockpit keeps.
JOB_CODES = {code: word.upper() for code, word in STATE_CODES.items()
             if word.upper() in JOB_STATES or word in ("requeue_hold", "resv_del_hold")}


@dataclass(frozen=True, slots=True)
class StateFilter:
    """What ``--state a,b`` selects: node words (state, display state or flag, lower case)
    and job states or state flags (upper case). A value may name both (completing)."""

    nodes: frozenset[str]
    jobs: frozenset[str]

    def node(self, node: Any) -> bool:
        return bool(self.nodes & ({node.state, node.display_state} | set(node.flags)))

    def job(self, job: Any) -> bool:
        return job.state in self.jobs or bool(self.jobs & set(job.state_flags))


def _node_words() -> dict[str, str]:
    words = {w: w for w in NODE_BASE_STATES | NODE_FLAGS | {"drained", "draining"}}
    return {**words, **NODE_CODES}


def _job_words() -> dict[str, str]:
    return {**{s.lower(): s for s in JOB_STATES}, "canceled": "CANCELLED", **JOB_CODES}


def parse_state_filter(text: str, flag: str = "--state") -> StateFilter:
    """``drain,PD`` -> the node words and job states it names: Slurm's long names and its
    short codes (squeue's PD/R/CG..., sinfo's alloc/mix/drng...), any case.

    Raises UsageError naming the unknown value and the known ones (an unknown state
    used to select nothing and exit 0, which reads as "no such jobs")."""
    node_words, job_words = _node_words(), _job_words()
    nodes: set[str] = set()
    jobs: set[str] = set()
    for raw in (w.strip() for w in text.split(",")):
        word = raw.lower()
        if not word:
            continue
        if word not in node_words and word not in job_words:
            raise UsageError(
                f"{flag} {raw!r}: not a Slurm state (node states: {', '.join(sorted(node_words))}; "
                f"job states: {', '.join(sorted(job_words))})")
        if word in node_words:
            nodes.add(node_words[word])
        if word in job_words:
            jobs.add(job_words[word])
    if not nodes and not jobs:
        raise UsageError(f"{flag} {text!r}: no state given")
    return StateFilter(frozenset(nodes), frozenset(jobs))


@dataclass(frozen=True, slots=True)
class Term:
    """One part of a query: a plain word (field None) or ``field op value``."""

    field: str | None
    op: str
    value: str
    negate: bool = False


def parse_query(text: str, fields: Iterable[str], aliases: Mapping[str, str] | None = None) -> tuple[Term, ...]:
    """Split ``text`` into terms; field names are checked against ``fields``.

    Raises UsageError naming an unknown field or a non-numeric comparison value.
    """
    known = {f.lower(): f for f in fields}
    alias = {k.lower(): v for k, v in (aliases or {}).items()}
    terms: list[Term] = []
    for word in text.split():
        m = _TERM.match(word)
        if not m or not m["value"] and m["op"] != ":":
            terms.append(Term(None, ":", word.lstrip("-").lower(), word.startswith("-") and len(word) > 1))
            continue
        name = m["field"].lower()
        field = known.get(name) or alias.get(name)
        if field is None:
            raise UsageError(f"unknown filter field {m['field']!r} (known: {', '.join(sorted(known))})")
        op, value, neg = m["op"], m["value"], bool(m["neg"])
        if op == "!=":
            op, neg = "=", not neg
        if op in _NUMERIC_OPS and _number(value) is None:
            raise UsageError(f"{m['field']}{op}{value}: {value!r} is not a number")
        value = value.lower()
        if field.lower() == "state" and op in (":", "="):
            value = ",".join(STATE_CODES.get(o, o) for o in value.split(","))
            _check_states(m["field"], value)
        terms.append(Term(field, op, value, neg))
    return tuple(terms)


# Words the views show in a state cell beside Slurm's: partitions' UP/INACTIVE, the
# flapping mark of the Nodes view, the GPUs view's short "alloc".
_VIEW_STATE_WORDS = frozenset({"up", "inactive", "flapping", "alloc"})


def _check_states(name: str, value: str) -> None:
    """A ``state:`` filter value must be (a part of) a state some view shows: an unknown
    one selected nothing and read as "no such rows". Raises UsageError naming it."""
    known = {w.lower() for w in (*_node_words(), *_node_words().values(), *_job_words(), *_job_words().values())}
    known |= _VIEW_STATE_WORDS
    for option in (o for o in value.split(",") if o):
        if not any(option in word for word in known):
            shown = sorted(w for w in known if w.isalpha() and len(w) > 2)
            raise UsageError(f"{name}:{option}: not a Slurm state (known: {', '.join(shown)}; short codes such "
                             f"as PD, R, CG work too)")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (tuple, list, frozenset, set)):
        return " ".join(str(v) for v in value).lower()
    return str(value).lower()


def _field_test(term: Term) -> Callable[[Any], bool]:
    """A test of one cell value for a field term."""
    if term.op in _NUMERIC_OPS:
        want = _number(term.value)
        cmp = {">": float.__gt__, ">=": float.__ge__, "<": float.__lt__, "<=": float.__le__}[term.op]
        return lambda v: (n := _number(v)) is not None and cmp(n, want)
    options = [o for o in term.value.split(",") if o] or [""]
    if term.op == "=":
        nums = [_number(o) for o in options]

        def equal(v: Any) -> bool:
            n = _number(v)
            if n is not None and all(x is not None for x in nums):
                return n in nums
            return _text(v) in options

        return equal
    return lambda v: any(o in _text(v) for o in options)


def compile_query(
    text: str, fields: Sequence[str], aliases: Mapping[str, str] | None = None
) -> Predicate | None:
    """A predicate ``(values, haystack) -> bool`` for ``text``; None when empty.

    ``values`` is indexed like ``fields``; ``haystack`` is the row's text in
    lower case. Raises UsageError as ``parse_query`` does.
    """
    terms = parse_query(text, fields, aliases)
    if not terms:
        return None
    index = {f: i for i, f in enumerate(fields)}
    checks: list[Callable[[Sequence[Any], str], bool]] = []
    for t in terms:
        if t.field is None:
            word = t.value
            check = (lambda vals, hay, w=word: w in hay)
        else:
            i, test = index[t.field], _field_test(t)
            check = (lambda vals, hay, i=i, test=test: test(vals[i]))
        checks.append((lambda vals, hay, c=check: not c(vals, hay)) if t.negate else check)
    return lambda vals, hay: all(c(vals, hay) for c in checks)


_DIGITS = re.compile(r"(\d+)")


def natural_key(value: Any) -> tuple:
    """Sort key: numbers numerically, strings case-insensitively with digit runs as numbers
    (node2 before node10); None and empty values sort last."""
    if value is None or value == "":
        return (2,)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, value)
    s = _text(value)
    parts = _DIGITS.split(s)
    return (1, tuple((0, int(p)) if p.isdecimal() else (1, p) for p in parts if p))


def sort_order(
    keys: Sequence[Any], values: Sequence[Sequence[Any]], column: int | None, reverse: bool = False
) -> list[Any]:
    """Row keys ordered by ``values[i][column]`` (natural order, missing values last even when
    reversed); the original order when ``column`` is None. Stable."""
    if column is None:
        return list(reversed(keys)) if reverse else list(keys)
    decorated = [(natural_key(v[column]), k) for k, v in zip(keys, values)]
    present = [d for d in decorated if d[0][0] != 2]
    missing = [d for d in decorated if d[0][0] == 2]
    present.sort(key=lambda d: d[0], reverse=reverse)
    return [k for _, k in present] + [k for _, k in missing]
