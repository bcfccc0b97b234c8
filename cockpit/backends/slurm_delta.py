"""Big Slurm outputs -> deltas keyed by job id / node name. Pure: no I/O, no process.

At 100k jobs ``squeue --json`` is >100 MB and parsing it costs ~5 s of CPU, yet
only ~1% of the jobs change between two refreshes. A differ keeps what it saw
last and turns a new output into a :class:`Delta` (added/changed objects and
removed keys), so only the changes cross to the UI process and only they are
re-rendered. ``cockpit.backends.parseproc`` runs the differs in a worker process;
tests run them in-process.

Jobs are compared twice, cheaply first: each job record's raw JSON bytes are
hashed, so an unchanged record is neither decoded nor rebuilt; a changed record
is rebuilt, and sent only if the resulting :class:`Job` differs from the one sent
before (Slurm rewrites fields cockpit does not read, e.g. a pending job's
``last_sched_evaluation``). Nodes (10k at most) are parsed whole and compared by
the same digest of the built object.

The result after applying every delta to a :class:`DeltaStore` equals what the
in-process parsers return for the same output (same objects, same order for a
first load; later additions come last). Errors are the same ParseError.
"""

from __future__ import annotations

import copyreg
import io
import json
import operator
import pickle
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from cockpit.backends import slurm_json
from cockpit.backends.slurm_json_common import RECORD_ERRORS, get_record, record_name, slurm_errors, why_unread
from cockpit.backends.slurm_json_nodes import node_from_record
from cockpit.backends.slurm_json_fast import JobRecord, msgspec
from cockpit.changelog import ChangeLog
from cockpit.errors import ParseError
from cockpit.heap import built_outside_gc, untracked
from cockpit.models import GpuGroup, Job, JobGpus, Node, SharedGres, record_fields
from cockpit.models.unread import unread

CHUNK = 1000  # objects per Delta: unpickling 1000 jobs costs the UI process ~10 ms


@dataclass(frozen=True, slots=True)
class Delta:
    """One step from the previous result to the new one.

    ``reset``: forget everything known before (first load, or the worker lost its
    state). ``done``: the last Delta of this output; only it carries ``total``,
    ``warnings`` and, when the output holds no objects, Slurm's ``errors``.
    """

    kind: str
    upserts: tuple[Any, ...] = ()
    removed: tuple[Any, ...] = ()
    done: bool = False
    reset: bool = False
    total: int = 0
    warnings: tuple[str, ...] = ()
    slurm_errors: tuple[str, ...] = ()


# -- compact pickling ----------------------------------------------------------
# Frozen slots dataclasses pickle through dataclasses' Python __getstate__ /
# __setstate__ (~20 us a job each way); as (cls, field values) it is ~2x faster.
def _reducer(cls: type) -> Any:
    get = operator.attrgetter(*record_fields(cls))
    return lambda obj: (cls, get(obj))


_JOB_FIELDS = list(record_fields(Job))
# Strings most jobs share: one copy each in the UI process instead of one per job
# (~40 MB at 100k jobs); rows then share them too.
_SHARED = tuple(_JOB_FIELDS.index(n) for n in ("user", "account", "partition", "state", "reason", "gpu_type", "work_dir"))
# Frozensets too: a job's state flags ({"REQUEUED"}, mostly empty) arrived as one
# 216-byte frozenset per job, each tracked by the cyclic GC (100k at 100k jobs);
# a few distinct values cover a whole queue.
_SETS = tuple(_JOB_FIELDS.index(n) for n in ("state_flags", "unknown"))
_SHARED_SETS: dict[frozenset, frozenset] = {}


def _share_sets(v: list, at: tuple[int, ...]) -> None:
    for i in at:
        fs = v[i]
        shared = _SHARED_SETS.get(fs)
        if shared is None and len(_SHARED_SETS) < 4096:  # a bound: flags are few, but cluster data is data
            shared = _SHARED_SETS[fs] = fs
        if shared is not None:
            v[i] = shared


def _new_job(*values: Any) -> Job:
    """Unpickling constructor of Job (runs in the UI process)."""
    v = list(values)
    for i in _SHARED:
        if type(v[i]) is str:
            v[i] = sys.intern(v[i])
    _share_sets(v, _SETS)
    return Job(*v)


# A node's flags and unknown fields too: Node is untracked (gc=False), but each
# frozenset is a container the cyclic GC walks (two per node: 40k at 20k nodes).
_NODE_FIELDS = list(record_fields(Node))
_NODE_SETS = tuple(_NODE_FIELDS.index(n) for n in ("flags", "unknown"))


def _new_node(*values: Any) -> Node:
    """Unpickling constructor of Node (runs in the UI process)."""
    v = list(values)
    _share_sets(v, _NODE_SETS)
    return Node(*v)


_DISPATCH = copyreg.dispatch_table.copy()
for _cls in (JobGpus, GpuGroup, SharedGres):
    _DISPATCH[_cls] = _reducer(_cls)
_job_values = operator.attrgetter(*_JOB_FIELDS)
_DISPATCH[Job] = lambda job: (_new_job, _job_values(job))
_node_values = operator.attrgetter(*_NODE_FIELDS)
_DISPATCH[Node] = lambda node: (_new_node, _node_values(node))


def dumps(obj: Any) -> bytes:
    """Pickle ``obj`` with the compact form of the model classes."""
    buf = io.BytesIO()
    p = pickle.Pickler(buf, protocol=5)
    p.dispatch_table = _DISPATCH
    p.dump(obj)
    return buf.getvalue()


def _digest(obj: Any) -> int:
    # Keyed 64-bit hash of the pickled fields: unlike hash(obj) it has no
    # structured collisions (hash(-1) == hash(-2)). Equal objects may rarely
    # pickle differently (shared strings, frozenset order): that only costs a
    # redundant update, never a missed one.
    return hash(dumps(obj))


# -- differs -------------------------------------------------------------------
class _Differ:
    """What was sent last: key -> digest, plus per-object warnings."""

    kind = ""

    def __init__(self, source: str, chunk: int = CHUNK) -> None:
        self.source, self.chunk = source, chunk
        self._digests: dict[Any, int] = {}
        self._warnings: dict[Any, tuple[str, ...]] = {}

    def reset(self) -> None:
        self._digests, self._warnings = {}, {}

    def _compare(self, objs: list[Any], key: Any, digests: dict[Any, int]) -> list[Any]:
        """The objects whose digest differs from the last one sent; fills ``digests``."""
        out = []
        old = self._digests
        for obj in objs:
            k = key(obj)
            d = _digest(obj)
            digests[k] = d
            if old.get(k) != d:
                out.append(obj)
        return out

    def _finish(self, keys: list[Any], digests: dict[Any, int], warnings: dict[Any, tuple[str, ...]],
                data: Any, reset: bool, unread_now: list[str] = ()) -> Delta:
        """Commit the new state and describe what went away."""
        if len(set(keys)) != len(keys):
            raise ParseError(self.source, "the same id appears twice")
        removed = tuple(self._digests.keys() - digests.keys())
        self._digests, self._warnings = digests, warnings
        return self._done(keys, removed, warnings, data, reset, unread_now)

    def _done(self, keys: list[Any], removed: tuple[Any, ...], warnings: dict[Any, tuple[str, ...]],
              data: Any, reset: bool, unread_now: list[str] = ()) -> Delta:
        """The last Delta of an output; Slurm's ``errors`` only matter when it holds nothing."""
        errs: tuple[str, ...] = ()
        if not keys and not unread_now:
            try:
                errs = tuple(slurm_errors(json.loads(data)))
            except (ValueError, TypeError, AttributeError):
                errs = ()
        all_warnings = tuple(dict.fromkeys([*unread_now, *(w for ws in warnings.values() for w in ws)]))
        return Delta(self.kind, (), removed, True, reset, len(keys), all_warnings, errs)

    def _last_records(self, splitter: Any, split: Any, careful: Any, took: bool) -> tuple[bytes, list[Any] | None]:
        """The document's end (``head`` + what was never cut) and its records; None:
        parse it whole (nothing was cut: a shape the splitter does not take). If
        records were cut but the end is not JSON, ``careful`` names the problem."""
        rest = splitter.finish()
        records = split(rest)
        if records is None and took:
            careful(rest, self.source)
            raise ParseError(self.source, "the output ends in a way that could not be parsed")
        return rest, records

    def _unread(self, kind: str, rec: Any, index: int, exc: BaseException) -> str:
        """The warning for a record that could not be read (named when its bytes say who)."""
        try:
            name = record_name(json.loads(bytes(rec)), "job_id" if kind == "job" else "name", index)
        except (ValueError, RecursionError):
            name = f"#{index + 1}"
        return unread(self.source, kind, name, why_unread(exc, kind, name))

    def _chunks(self, objs: list[Any], reset: bool) -> Iterator[Delta]:
        for i in range(0, len(objs), self.chunk):
            yield Delta(self.kind, tuple(objs[i:i + self.chunk]), reset=reset and i == 0)


class JobsDiffer(_Differ):
    """``squeue --json`` (or ``scontrol show job --json``) -> Deltas keyed by job id."""

    kind = "jobs"

    def __init__(self, source: str = "squeue --json", chunk: int = CHUNK) -> None:
        super().__init__(source, chunk)
        self._raw: dict[int, int] = {}  # hash of a record's bytes -> job id

    def reset(self) -> None:
        super().reset()
        self._raw = {}

    def feed(self, data: bytes, reset: bool = False) -> Iterator[Delta]:
        """Deltas from the previous output to ``data``; the last has ``done``.

        Raises ParseError (as ``parse_squeue`` would) before committing anything:
        the differ then still holds the previous state.
        """
        return self.feed_stream((data,), reset)

    def feed_stream(self, chunks: Iterable[Any], reset: bool = False) -> Iterator[Delta]:
        """Like :meth:`feed`, for an output arriving in ``chunks`` (a command's pipe).

        The output is split into job records as it comes (:class:`_JobSplitter`),
        so only the unsplit tail and the changed records are held, never the whole
        output; Deltas of changed jobs are yielded as soon as a chunk of them is
        built. The state is updated in place (a second copy of it was +20 MB at
        100k jobs); if anything fails half-way the differ forgets everything, so
        its next Delta is a reset (the parent asks for one after a failure anyway).
        An exception raised by ``chunks`` (the command failed) propagates.
        """
        if reset:
            self.reset()
        if _SPLIT is None:
            yield from self._feed_parsed(b"".join(bytes(c) for c in chunks), reset or not self._digests)
            return
        try:
            yield from self._feed_in_place(chunks, reset or not self._digests)
        except BaseException:
            self.reset()
            raise

    def _feed_in_place(self, chunks: Iterable[Any], reset: bool) -> Iterator[Delta]:
        splitter = _JobSplitter()
        keys: list[Any] = []  # job ids in output order; None until a new record is built
        todo: list[tuple[int, int, bytes]] = []
        unread_now: list[str] = []
        raw, digests, warnings = self._raw, self._digests, self._warnings
        seen: set[int] | None = set() if raw else None  # what to keep of ``raw``; a first load keeps all

        def take(records: Iterable[bytes]) -> None:
            for rec in records:
                h = hash(rec)
                if seen is not None:
                    seen.add(h)
                jid = raw.get(h)
                if jid is None:
                    todo.append((len(keys), h, rec))
                    keys.append(None)
                else:
                    keys.append(jid)

        def build(n: int) -> list[Job]:
            changed = []
            for i, h, rec in todo[:n]:
                try:
                    job, warns = self._build(rec, splitter.head)
                except RECORD_ERRORS as exc:  # costs this job only, said in the warnings
                    unread_now.append(self._unread("job", rec, i, exc))
                    keys[i] = _UNREAD
                    continue
                jid = keys[i] = raw[h] = job.job_id
                if warns:
                    warnings[jid] = warns
                else:
                    warnings.pop(jid, None)
                d = _digest(job)
                if digests.get(jid) != d:
                    digests[jid] = d
                    changed.append(job)
            del todo[:n]
            return changed

        first = True
        for chunk in chunks:
            take(splitter.push(chunk))
            while len(todo) >= self.chunk:
                changed = build(self.chunk)
                if changed:
                    yield Delta("jobs", tuple(changed), reset=reset and first)
                    first = False
        rest, split = self._last_records(splitter, _split_jobs, slurm_json.parse_squeue, bool(keys))
        if split is None:
            yield from self._feed_parsed(rest, reset)
            return
        take(bytes(r) for r in split)
        del split
        while todo:
            changed = build(self.chunk)
            if changed:
                yield Delta("jobs", tuple(changed), reset=reset and first)
                first = False
        keys = [k for k in keys if k is not _UNREAD]
        now = set(keys)
        if len(now) != len(keys):
            raise ParseError(self.source, "the same id appears twice")
        removed = tuple(k for k in digests if k not in now)
        for k in removed:
            del digests[k]
            warnings.pop(k, None)
        if seen is not None:
            for h in [h for h in raw if h not in seen]:  # records that changed or went away
                del raw[h]
        yield self._done(keys, removed, warnings, rest, reset and first, unread_now)

    def _build(self, rec: Any, head: bytes) -> tuple[Job, tuple[str, ...]]:
        try:
            record = _RECORD.decode(rec)
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError, RecursionError):
            # Let the careful path name the problem as in-process parsing does
            # (in a document holding just this record).
            slurm_json.parse_squeue((head or b'{"jobs": [') + bytes(rec) + b"]}", self.source)
            raise ParseError(self.source, "a job record could not be decoded") from None
        warns: list[str] = []
        job = slurm_json.job_from_record(record, self.source, warns)
        return job, tuple(warns)

    def _feed_parsed(self, data: bytes, reset: bool) -> Iterator[Delta]:
        """Fallback for inputs the fast split does not take (no msgspec, odd shapes)."""
        warns: list[str] = []
        jobs = slurm_json.parse_squeue(bytes(data), self.source, warns)
        self._raw = {}
        digests: dict[Any, int] = {}
        changed = self._compare(list(jobs), _JOB_ID, digests)
        yield from self._chunks(changed, reset)
        # job-level attribution of warnings is lost here; keep them on the first job
        warnings = {jobs[0].job_id: tuple(warns)} if jobs and warns else {}
        yield self._finish([j.job_id for j in jobs], digests, warnings, data, reset and not changed,
                           [] if jobs else warns)


class NodesDiffer(_Differ):
    """``scontrol show node --json`` (``fmt="scontrol"``) or ``sinfo --json`` -> Deltas by node name."""

    kind = "nodes"

    def __init__(self, source: str = "scontrol show node --json", fmt: str = "scontrol", chunk: int = CHUNK) -> None:
        super().__init__(source, chunk)
        self.fmt = fmt
        self._raw: dict[int, Any] = {}  # hash of a record's bytes -> node name

    def feed(self, data: bytes, reset: bool = False) -> Iterator[Delta]:
        """Like :meth:`JobsDiffer.feed`. Raises ParseError."""
        return self.feed_stream((data,), reset)

    def feed_stream(self, chunks: Iterable[Any], reset: bool = False) -> Iterator[Delta]:
        """Like :meth:`JobsDiffer.feed_stream`: ``scontrol show node --json`` is cut
        into node records as it arrives (17 MB at 10k nodes need not be held);
        ``sinfo --json`` (22.05) is read whole. The state is committed at the end."""
        if reset:
            self.reset()
        reset = reset or not self._digests
        if self.fmt != "scontrol" or _SPLIT is None:
            buf = bytearray()
            for part in chunks:
                buf += part
            yield from self._feed_parsed(buf, reset)
            return
        # As for jobs: an unchanged record is neither decoded nor rebuilt. Records are
        # decoded one at a time, so the whole document never exists as Python objects.
        splitter = _JobSplitter("nodes", "architecture")
        names: list[Any] = []
        raw_new: dict[int, Any] = {}
        digests: dict[Any, int] = {}
        warnings: dict[Any, tuple[str, ...]] = {}
        changed: list[Any] = []
        unread_now: list[str] = []

        def take(records: Iterable[Any]) -> None:
            for rec in records:
                h = hash(bytes(rec))
                name = self._raw.get(h)
                if name is None or name not in self._digests:
                    try:
                        node, warns = self._build(rec, len(names), splitter.head)
                    except RECORD_ERRORS as exc:  # costs this node only, said in the warnings
                        unread_now.append(self._unread("node", rec, len(names) + len(unread_now), exc))
                        continue
                    name = node.name
                    digests[name] = d = _digest(node)
                    if self._digests.get(name) != d:
                        changed.append(node)
                    if warns:
                        warnings[name] = warns
                else:
                    digests[name] = self._digests[name]
                    if name in self._warnings:
                        warnings[name] = self._warnings[name]
                names.append(name)
                raw_new[h] = name

        for chunk in chunks:
            take(splitter.push(chunk))
        rest, split = self._last_records(splitter, _split_nodes, slurm_json.parse_scontrol_nodes, bool(names))
        if split is None:
            yield from self._feed_parsed(rest, reset)
            return
        take(split)
        del split
        yield from self._chunks(changed, reset)
        done = self._finish(names, digests, warnings, rest, reset and not changed, unread_now)
        self._raw = raw_new
        yield done

    def reset(self) -> None:
        super().reset()
        self._raw: dict[int, Any] = {}

    def _build(self, rec: Any, i: int, head: bytes | None) -> tuple[Node, tuple[str, ...]]:
        warns: list[str] = []
        try:
            record = json.loads(bytes(rec))
        except ValueError:  # names the problem as in-process parsing does (a document of this record)
            slurm_json.parse_scontrol_nodes((head or b'{"nodes": [') + bytes(rec) + b"]}", self.source)
            raise ParseError(self.source, "a node record could not be decoded") from None
        node = node_from_record(get_record(record, "node", i, self.source), self.source, warns)
        return node, tuple(warns)

    def _feed_parsed(self, data: bytes, reset: bool) -> Iterator[Delta]:
        warns: list[str] = []
        if self.fmt == "sinfo":
            nodes, _parts = slurm_json.parse_sinfo(bytes(data), self.source, warns)
        else:
            nodes = slurm_json.parse_scontrol_nodes(bytes(data), self.source, warns)
        self._raw = {}
        digests: dict[Any, int] = {}
        changed = self._compare(list(nodes), _NAME, digests)
        yield from self._chunks(changed, reset)
        warnings = {nodes[0].name: tuple(warns)} if nodes and warns else {}
        yield self._finish([n.name for n in nodes], digests, warnings, data, reset and not changed,
                           [] if nodes else warns)


_JOB_ID = operator.attrgetter("job_id")
_UNREAD = object()  # the key of a job record that could not be read
_NAME = operator.attrgetter("name")

if msgspec is not None:
    _Split = msgspec.defstruct("SqueueSplit", [("jobs", list[msgspec.Raw] | None, None)])
    _SPLIT: Any = msgspec.json.Decoder(_Split)
    _NSplit = msgspec.defstruct("NodesSplit", [("nodes", list[msgspec.Raw] | None, None)])
    _NSPLIT: Any = msgspec.json.Decoder(_NSplit)
    _RECORD: Any = msgspec.json.Decoder(JobRecord)
    _RAW: Any = msgspec.json.Decoder(msgspec.Raw)
else:  # pragma: no cover - msgspec is a dependency; kept working without it
    _SPLIT = _RECORD = _NSPLIT = _RAW = None


# Where a record may start: every Slurm version's job records begin with
# "account", node records with "architecture" (checked against the recordings
# from 21.08 to 24.11). Inside a JSON
# string a quote is escaped, so cluster strings cannot imitate this; a nested
# object that happened to start with "account" is caught by the check below.
_HEAD_LIMIT = 1 << 20  # no record start within this: not the shape we split; keep it whole
_MAX_MISSES = 64  # wrong candidates in a row before giving up cutting (each re-checks the record)
_LOOKBACK = 4096  # bytes re-scanned after a chunk: a record start cut in two by the chunking
_SPACE = b" \t\r\n"


def _next_start(buf: bytearray, pos: int, needle: bytes = b'"account"') -> tuple[int, int, int] | None:
    """The next ``,{"account":`` (or ``[``, any spacing; ``needle`` is the quoted
    first key) from ``pos``: the offsets of the comma, of the brace and after the
    colon. A literal search (memchr speed) then a look around it: a regex tried at
    every comma costs 4x more."""
    find, n, size = buf.find, len(buf), len(needle)
    while (i := find(needle, pos)) >= 0:
        pos = i + size
        j = i - 1
        while j >= 0 and buf[j] in _SPACE:
            j -= 1
        if j < 1 or buf[j] != 0x7B:  # {
            continue
        brace = j
        j -= 1
        while j >= 0 and buf[j] in _SPACE:
            j -= 1
        if j < 0 or buf[j] not in b",[":
            continue
        k = pos
        while k < n and buf[k] in _SPACE:
            k += 1
        if k >= n:
            return None  # cut by the chunking: the next push looks again
        if buf[k] == 0x3A:  # :
            return j, brace, k + 1
    return None


class _JobSplitter:
    """Cuts a ``squeue --json`` document arriving in chunks into job records
    (``array``/``first``: the array's key and its records' first key; node records
    of ``scontrol show node --json`` start with "architecture").

    A candidate cut is a record start at the array's level; the bytes between two
    cuts are accepted only if they are exactly one complete JSON value (msgspec
    checks that in C), so a wrong candidate merely makes the next record longer.
    What is never cut (an unknown shape, the last record and the document's end)
    comes back from :meth:`finish` as a small document ``head + rest`` that the
    whole-document parsers take.
    """

    def __init__(self, array: str = "jobs", first: str = "account") -> None:
        self.needle = f'"{first}"'.encode()
        self.start_re = re.compile(rb'[\[,]\s*(\{\s*' + re.escape(self.needle) + rb'\s*:)')
        self.head_re = re.compile(rb'"' + array.encode() + rb'"\s*:\s*\[\s*$')
        self.head: bytes | None = None  # the document up to the records' array, once found
        self.buf = bytearray()
        self.scan = 0
        self.whole = False  # gave up splitting: finish() returns everything
        self.misses = 0  # candidates in a row that did not end a record

    def push(self, chunk: Any) -> list[bytes]:
        buf = self.buf
        buf += chunk
        if self.whole:
            return []
        if self.head is None:
            m = self.start_re.search(buf)
            if m is None or buf[m.start()] != 0x5B or not self.head_re.search(buf, 0, m.start() + 1):
                if m is not None or len(buf) > _HEAD_LIMIT:
                    self.whole = True
                return []
            self.head = bytes(buf[:m.start(1)])
            del buf[:m.start(1)]
            self.scan = 1
        records = []
        start, scan = 0, self.scan
        check = _RAW.decode
        needle = self.needle
        while (m := _next_start(buf, scan, needle)) is not None:
            end = m[0]
            while buf[end - 1] in _SPACE:
                end -= 1
            piece = memoryview(buf)[start:end]
            try:
                check(piece)
                ok = True
            except (msgspec.DecodeError, ValueError, RecursionError):
                ok = False  # not a record's end: look further
            if ok:
                records.append(bytes(piece))
                start, self.misses = m[1], 0
            piece.release()
            scan = m[2]
            if not ok:
                self.misses += 1
                if self.misses > _MAX_MISSES:  # not records as we know them: stop cutting
                    self.whole = True
                    break
        if start:
            del buf[:start]
        # resume where a record start could still begin (it may straddle two chunks)
        self.scan = max(scan - start, len(buf) - _LOOKBACK, 0)
        return records

    def finish(self) -> bytes:
        if self.head is None:
            return bytes(self.buf)
        return self.head + bytes(self.buf)


def _split(decoder: Any, data: Any, field: str) -> list[Any] | None:
    """Each record's raw bytes under ``field``, or None when the fast path does not apply."""
    if decoder is None:
        return None
    try:
        doc = decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError, RecursionError):
        return None
    return getattr(doc, field)


def _split_jobs(data: Any) -> list[Any] | None:
    """Each job record's raw bytes (``squeue --json``), or None."""
    return _split(_SPLIT, data, "jobs")


def _split_nodes(data: Any) -> list[Any] | None:
    """Each node record's raw bytes (``scontrol show node --json``), or None."""
    return _split(_NSPLIT, data, "nodes")


class DeltaStore:
    """The UI side: objects by key, kept current by applying Deltas.

    Unchanged objects keep their identity from one result to the next, so the
    views can find what changed with ``is``.
    """

    def __init__(self, key: Any) -> None:
        self.key = key
        self.objects: dict[Any, Any] = {}
        self._changes = 0
        self._values: tuple[Any, int, tuple[Any, ...]] | None = None  # (objects, changes, values) last returned
        self.busy: Any = None  # a worker thread's work on this store, still running (cockpit.backends._deltafeed)
        self.log = ChangeLog()  # what changed between the values tuples handed out, for the views

    def apply(self, delta: Delta) -> None:
        log = self.log
        if delta.reset:
            self.objects = {}
            log.lost()
        objs, key = self.objects, self.key
        if delta.removed or delta.upserts:
            self._changes += 1
        for k in delta.removed:
            old = objs.pop(k, None)
            if old is not None:
                log.remove(k, old)
        if delta.upserts:
            pairs = list(zip(map(key, delta.upserts), delta.upserts))
            objs.update(pairs)
            log.upsert(pairs)

    def values(self) -> tuple[Any, ...]:
        """The objects in order; the same tuple again while nothing changed
        (10k unchanged nodes: no new tuple, and the views see ``is``)."""
        last = self._values
        if last is not None and last[0] is self.objects and last[1] == self._changes:
            return last[2]
        with built_outside_gc(len(self.objects)):
            values = untracked(tuple(self.objects.values()))  # Jobs and Nodes: gc=False Structs
        if last is not None and last[0] is not self.objects:
            self.log.lost()  # the objects dict was replaced: by replace(), abandon() or a reset
        self._values = (self.objects, self._changes, values)
        self.log.publish(values)
        return values

    def replace(self, objects: tuple[Any, ...]) -> None:
        """Take a result parsed elsewhere (in-process), keeping unchanged objects' identity."""
        self.log.lost()
        old, key = self.objects, self.key
        new = {}
        for obj in objects:
            k = key(obj)
            prev = old.get(k)
            new[k] = prev if prev is not None and prev == obj else obj
        self.objects = new


def store_for(kind: str) -> DeltaStore:
    return DeltaStore(_JOB_ID if kind == "jobs" else _NAME)
