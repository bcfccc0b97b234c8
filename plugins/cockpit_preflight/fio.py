"""Parse what the storage test measures with: fio's JSON, dd's summary line and
the shell loop that times file creates where fio is missing.

fio JSON (``--output-format=json``): ``jobs[]`` with ``job options`` (``rw``,
``bs``, ``ioengine``...) and ``read``/``write`` blocks whose ``bw`` is KiB/s in
every version and ``bw_bytes`` B/s from fio 3.x on (tests/data/fio: 2.18 and 3.1
recordings lack it). Text before the JSON (fio's notes, a shell's lines) is
skipped. The metadata engines (filecreate, filestat, filedelete) report their
operations as reads, one per file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from cockpit.plugins.api import ParseError

_WRITES = {"write", "randwrite", "trim", "randtrim"}
_MIXED = {"rw", "readwrite", "randrw", "trimwrite"}
META_ENGINES = {"filecreate", "filestat", "filedelete"}


@dataclass(frozen=True)
class FioJob:
    name: str
    rw: str
    bs: str
    ioengine: str
    numjobs: int
    iodepth: int
    read_bw: float  # bytes/s
    read_iops: float
    write_bw: float
    write_iops: float
    runtime_ms: int
    error: int

    @property
    def bandwidth(self) -> float:
        """B/s in the job's direction (reads for read/randread and the metadata engines)."""
        return self.write_bw if self.rw in _WRITES else self.read_bw + (self.write_bw if self.rw in _MIXED else 0)

    @property
    def iops(self) -> float:
        return self.write_iops if self.rw in _WRITES else self.read_iops + (self.write_iops if self.rw in _MIXED else 0)


@dataclass(frozen=True)
class FioRun:
    version: str
    jobs: tuple[FioJob, ...]

    @property
    def error(self) -> int:
        return next((j.error for j in self.jobs if j.error), 0)

    @property
    def bandwidth(self) -> float:
        """Sum over jobs (one job per entry without group_reporting, one group with it)."""
        return sum(j.bandwidth for j in self.jobs)

    @property
    def iops(self) -> float:
        return sum(j.iops for j in self.jobs)


def _int(value, default: int = 1) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        return default


def _side(block: dict, source: str, name: str, side: str) -> tuple[float, float]:
    if not isinstance(block, dict):
        raise ParseError(source, f"job {name!r} has no {side!r} block")
    try:
        bw = float(block["bw_bytes"]) if "bw_bytes" in block else float(block["bw"]) * 1024.0
        return bw, float(block["iops"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError(source, f"job {name!r} {side}: bad or missing bandwidth/iops ({exc})") from None


def parse_fio_json(text: str, source: str = "fio --output-format=json") -> FioRun:
    """Raises ParseError naming the source for text that holds no fio JSON document."""
    start = next((m.start() for m in re.finditer(r"(?m)^\s*\{", text)), -1)
    if start < 0:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise ParseError(source, f"no JSON document (first line {first[:80]!r})")
    try:
        doc, _ = json.JSONDecoder().raw_decode(text[start:].lstrip())
    except json.JSONDecodeError as exc:
        raise ParseError(source, f"bad JSON at line {exc.lineno}: {exc.msg}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list) or not doc["jobs"]:
        raise ParseError(source, "no 'jobs' list: not fio output")
    gopts = doc.get("global options") or {}
    jobs = []
    for raw in doc["jobs"]:
        if not isinstance(raw, dict):
            raise ParseError(source, f"a job entry is {type(raw).__name__}, not an object")
        opts = {**gopts, **(raw.get("job options") or {})}
        name = str(raw.get("jobname", "?"))
        rbw, riops = _side(raw.get("read"), source, name, "read")
        wbw, wiops = _side(raw.get("write"), source, name, "write")
        runtime = max(_int((raw.get("read") or {}).get("runtime", 0), 0), _int((raw.get("write") or {}).get("runtime", 0), 0))
        jobs.append(FioJob(name, str(opts.get("rw", opts.get("readwrite", "read"))), str(opts.get("bs", "")),
                           str(opts.get("ioengine", "")), _int(opts.get("numjobs", 1)), _int(opts.get("iodepth", 1)),
                           rbw, riops, wbw, wiops, runtime, _int(raw.get("error", 0), 0)))
    return FioRun(str(doc.get("fio version", "fio")), tuple(jobs))


# ---------------------------------------------------------------- dd

# "33554432 bytes (34 MB, 32 MiB) copied, 0.0376317 s, 892 MB/s"; older coreutils:
# "1048576 bytes (1.0 MB) copied, 0.00188 s, 557 MB/s"; some locales use a decimal comma.
_DD = re.compile(r"^(\d+) bytes\b.*copied, ([0-9]+(?:[.,][0-9]+)?) s\b")


@dataclass(frozen=True)
class DdRun:
    bytes: int
    seconds: float

    @property
    def bandwidth(self) -> float:
        return self.bytes / self.seconds if self.seconds > 0 else 0.0


def parse_dd(text: str, source: str = "dd") -> DdRun:
    """The last summary line of dd's stderr. Raises ParseError when there is none or
    when dd reported an error (a short copy is not a measurement)."""
    errors = [ln.strip() for ln in text.splitlines() if ln.startswith("dd: ")]
    if errors:
        raise ParseError(source, errors[0])
    found = [m for m in (_DD.match(ln.strip()) for ln in text.splitlines()) if m]
    if not found:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise ParseError(source, f"no 'N bytes ... copied, T s' line (first line {first[:80]!r})")
    m = found[-1]
    seconds = float(m.group(2).replace(",", "."))
    if seconds <= 0:
        raise ParseError(source, f"elapsed time {m.group(2)} s: nothing measured")
    return DdRun(int(m.group(1)), seconds)


# ---------------------------------------------------------------- shell metadata loop

_META = re.compile(r"^meta (create|stat|unlink) files=(\d+) ns=(\d+)$")


def parse_meta_loop(text: str, source: str = "metadata loop") -> dict[str, float]:
    """``meta create files=N ns=T`` lines (the job script's fallback) -> ops/s by operation.

    Raises ParseError when no operation was timed."""
    out = {}
    for line in text.splitlines():
        m = _META.match(line.strip())
        if m and int(m.group(3)) > 0:
            out[m.group(1)] = int(m.group(2)) / (int(m.group(3)) / 1e9)
    if not out:
        raise ParseError(source, "no 'meta OP files=N ns=T' line")
    return out
