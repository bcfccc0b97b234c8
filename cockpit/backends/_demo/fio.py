"""Simulated fio and dd outputs, in the layouts of real recordings.

``fio --output-format=json`` documents follow fio 3.33's layout key by key, as
recorded on the test cluster (tests/data/preflight-jobs, from cockpit's own
storage job): ``fio version``, ``timestamp``, ``jobs[0]`` with ``job options``
and ``read``/``write``/``trim`` blocks (``bw_bytes``, ``bw`` in KiB/s,
``iops``, latencies with percentiles), ``disk_util`` with an md device's
``aggr_*`` figures and its member disks (the shape of tests/data/fio's RAID0
recording); the metadata engines (filecreate, filestat, filedelete) report
one read per file, with the engine in ``global options``. Numbers are
doubles with six decimals as fio prints them. dd's lines are coreutils'.

The figures come from the caller (_demo/storage.py); latencies follow from
them by Little's law (outstanding I/Os / IOPS), with the spread of the
recorded run's percentiles.
"""

from __future__ import annotations

import json
import time as _time
from collections.abc import Sequence
from dataclasses import dataclass

FIO_VERSION = "fio-3.33"
# clat percentiles / mean of the recorded seqread (tests/data/preflight-jobs, node01)
_PCT = ((1.0, 0.289), (5.0, 0.553), (10.0, 0.812), (20.0, 0.843), (30.0, 0.853), (40.0, 0.883), (50.0, 0.923),
        (60.0, 0.994), (70.0, 1.075), (80.0, 1.105), (90.0, 1.322), (95.0, 1.605), (99.0, 2.19), (99.5, 2.49),
        (99.9, 3.05), (99.95, 4.66), (99.99, 5.21))
_NS_KEYS = ("2", "4", "10", "20", "50", "100", "250", "500", "750", "1000")
_MS_KEYS = (*_NS_KEYS, "2000", ">=2000")
_DEPTHS = ("1", "2", "4", "8", "16", "32", ">=64")
_SUBMIT = ("0", "4", "8", "16", "32", "64", ">=64")


def dumps(doc: object, indent: int = 0) -> str:
    """fio's JSON style: two-space indent, ``"key" : value``, doubles as %f."""
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(doc, dict):
        if not doc:
            return "{}"
        items = [f'{inner}{json.dumps(k)} : {dumps(v, indent + 1)}' for k, v in doc.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(doc, list):
        return "[\n" + ",\n".join(inner + dumps(v, indent + 1) for v in doc) + f"\n{pad}]"
    if isinstance(doc, bool):
        return "true" if doc else "false"
    if isinstance(doc, float):
        return f"{doc:f}"
    if isinstance(doc, int):
        return str(doc)
    return json.dumps(doc)


def _stat(mean: float, n: int, spread: float = 0.33) -> dict:
    if n <= 0 or mean <= 0:
        return {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
    return {"min": int(mean * 0.087), "max": int(mean * 5.4), "mean": round(mean, 6),
            "stddev": round(mean * spread, 6), "N": n}


def _bucket(ns: float) -> tuple[str, str]:
    for unit, scale, keys in (("latency_ns", 1.0, _NS_KEYS), ("latency_us", 1e3, _NS_KEYS),
                              ("latency_ms", 1e6, _MS_KEYS)):
        for key in keys:
            if key != ">=2000" and ns <= float(key) * scale:
                return unit, key
        if unit == "latency_ms":
            return unit, ">=2000"
    return "latency_ms", ">=2000"


def _latency_buckets(clat_mean: float) -> dict[str, dict[str, float]]:
    out = {"latency_ns": dict.fromkeys(_NS_KEYS, 0.0), "latency_us": dict.fromkeys(_NS_KEYS, 0.0),
           "latency_ms": dict.fromkeys(_MS_KEYS, 0.0)}
    if clat_mean <= 0:
        return out
    prev = 0.0
    for pct, ratio in _PCT:  # the share of I/Os between two percentiles goes to the bucket of the upper one
        unit, key = _bucket(clat_mean * ratio)
        out[unit][key] = round(out[unit][key] + pct - prev, 6)
        prev = pct
    unit, key = _bucket(clat_mean * 5.4)
    out[unit][key] = round(out[unit][key] + 100.0 - prev, 6)
    return out


def _side(bw: float, iops: float, ms: int, depth: int, slat_share: float) -> dict:
    """One direction's block; zeros when nothing went that way."""
    ios = int(iops * ms / 1000)
    if ios <= 0:
        block = {"io_bytes": 0, "io_kbytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0, "runtime": 0, "total_ios": 0,
                 "short_ios": 0, "drop_ios": 0, "slat_ns": _stat(0, 0), "clat_ns": _stat(0, 0), "lat_ns": _stat(0, 0)}
        kib = 0.0
    else:
        lat = depth / iops * 1e9  # Little's law: what each I/O waited
        clat = _stat(lat * (1 - slat_share), ios)
        clat["percentile"] = {f"{p:f}": int(lat * (1 - slat_share) * r) // 256 * 256 for p, r in _PCT}
        io_bytes = int(bw * ms / 1000)
        block = {"io_bytes": io_bytes, "io_kbytes": io_bytes // 1024, "bw_bytes": int(bw), "bw": int(bw / 1024),
                 "iops": round(iops, 6), "runtime": ms, "total_ios": ios, "short_ios": 0, "drop_ios": 0,
                 "slat_ns": _stat(lat * slat_share, ios if slat_share else 0, 0.7), "clat_ns": clat,
                 "lat_ns": _stat(lat, ios if slat_share else 0)}
        kib = bw / 1024
    samples = max(2 * ms // 1000 - 1, 1) if ios > 0 else 0
    block.update({"bw_min": int(kib * 0.91), "bw_max": int(kib * 1.04), "bw_agg": 100.0 if samples else 0.0,
                  "bw_mean": round(kib * 0.985, 6), "bw_dev": round(kib * 0.031, 6), "bw_samples": samples,
                  "iops_min": int(iops * 0.91) if samples else 0, "iops_max": int(iops * 1.04) if samples else 0,
                  "iops_mean": round(iops * 0.985, 6) if samples else 0.0,
                  "iops_stddev": round(iops * 0.031, 6) if samples else 0.0, "iops_samples": samples})
    return block


@dataclass(frozen=True)
class Disks:
    """What ``disk_util`` lists: an md array over members (the slow member, if any,
    is the one busy all the time), or one plain disk; none on a network filesystem."""

    device: str  # md0, or "" for none
    members: tuple[str, ...] = ()
    busy_member: str = ""

    def util(self, reads: int, writes: int) -> list[dict]:
        if not self.device:
            return []
        share = max(len(self.members), 1)
        base = {"read_merges": 0, "write_merges": 0}
        head = {"name": self.device, "read_ios": reads, "write_ios": writes, **base, "read_ticks": 0,
                "write_ticks": 0, "in_queue": 0, "util": 0.0}
        if not self.members:
            head.update(read_ticks=reads // 7, write_ticks=writes // 5, in_queue=(reads + writes) // 6, util=96.4)
            return [head]
        per_r, per_w = reads * 2 // share, writes * 2 // share  # md splits 1M I/Os into 512k chunks
        ticks_r, ticks_w = per_r // 3, per_w // 2
        head.update(aggr_read_ios=per_r, aggr_write_ios=per_w, aggr_read_merges=0, aggr_write_merge=0,
                    aggr_read_ticks=ticks_r, aggr_write_ticks=ticks_w, aggr_in_queue=ticks_r + ticks_w,
                    aggr_util=99.87 if self.busy_member else 97.41)
        out = [head]
        for m in self.members:
            busy = 99.93 if m == self.busy_member else (38.6 if self.busy_member else 97.4)
            slow = 6 if m == self.busy_member else 1
            out.append({"name": m, "read_ios": per_r, "write_ios": per_w, **base, "read_ticks": ticks_r * slow,
                        "write_ticks": ticks_w * slow, "in_queue": (ticks_r + ticks_w) * slow, "util": busy})
        return out


def _header(end: float, global_options: dict | None) -> dict:
    doc: dict = {"fio version": FIO_VERSION, "timestamp": int(end), "timestamp_ms": int(end * 1000),
                 "time": _time.strftime("%a %b %e %H:%M:%S %Y", _time.gmtime(end))}
    if global_options:
        doc["global options"] = global_options
    return doc


def data_test(*, name: str, rw: str, bs: str, directory: str, size: str, numjobs: int, ioengine: str,
              iodepth: int, direct: bool, runtime: int, bw: float, iops: float, end: float, disks: Disks) -> str:
    """One data test (``--rw read|write|randread``, time based, group reporting)."""
    ms = runtime * 1000 + 1
    depth = max(iodepth * numjobs, 1)
    writes = rw in ("write", "randwrite")
    rd = _side(0.0 if writes else bw, 0.0 if writes else iops, ms, depth, 0.034)
    wr = _side(bw if writes else 0.0, iops if writes else 0.0, ms, depth, 0.043)
    clat = (wr if writes else rd)["clat_ns"]["mean"]
    level = {k: 0.0 for k in _DEPTHS}
    level[next((k for k in _DEPTHS if k != ">=64" and int(k) >= iodepth), ">=64")] = 100.0
    submit = {k: 0.0 for k in _SUBMIT}
    submit[next((k for k in _SUBMIT[1:] if k != ">=64" and int(k) >= iodepth), ">=64")] = 100.0
    ios = rd["total_ios"] + wr["total_ios"]
    job = {"jobname": name, "groupid": 0, "error": 0, "eta": 0, "elapsed": runtime + 1,
           "job options": {"name": name, "rw": rw, "bs": bs, "directory": directory,
                           "filename_format": "cockpit.$jobnum", "size": size, "numjobs": str(numjobs),
                           "ioengine": ioengine, "iodepth": str(iodepth), "direct": "1" if direct else "0",
                           "runtime": str(runtime)},
           "read": rd, "write": wr, "trim": _side(0.0, 0.0, ms, depth, 0.0),
           "sync": {"total_ios": 0, "lat_ns": _stat(0, 0)},
           "job_runtime": ms * numjobs, "usr_cpu": 11.9 if rw == "randread" else 3.1,
           "sys_cpu": 31.8 if rw == "randread" else 8.8, "ctx": int(ios * 0.72), "majf": 0,
           "minf": 12 + 256 * numjobs * (not writes),
           "iodepth_level": level, "iodepth_submit": submit, "iodepth_complete": dict(submit),
           **_latency_buckets(clat), "latency_depth": iodepth, "latency_target": 0, "latency_percentile": 100.0,
           "latency_window": 0}
    doc = _header(end, None)
    doc["jobs"] = [job]
    util = disks.util(0 if writes else rd["total_ios"], wr["total_ios"])
    if util:
        doc["disk_util"] = util
    return dumps(doc)


META_ENGINES = {"create": "filecreate", "stat": "filestat", "unlink": "filedelete"}


def meta_test(*, test: str, directory: str, nrfiles: int, ops: float, end: float, disks: Disks) -> str:
    """One metadata test: fio's file engines, one read per file."""
    engine = META_ENGINES[test]
    ms = max(int(nrfiles / ops * 1000), 1)
    rd = _side(ops * 4096, ops, ms, 1, 0.0)
    rd["total_ios"], rd["io_bytes"], rd["io_kbytes"] = nrfiles, nrfiles * 4096, nrfiles * 4
    job = {"jobname": "meta", "groupid": 0, "error": 0, "eta": 2147483647, "elapsed": ms // 1000 + 1,
           "job options": {"name": "meta", "directory": directory, "nrfiles": str(nrfiles), "filesize": "4k",
                           "bs": "4k", "openfiles": "1"},
           "read": rd, "write": _side(0.0, 0.0, ms, 1, 0.0), "trim": _side(0.0, 0.0, ms, 1, 0.0),
           "sync": {"total_ios": 0, "lat_ns": _stat(0, 0)}, "job_runtime": ms,
           "usr_cpu": 27.272727 if test == "unlink" else 0.0, "sys_cpu": 95.454545 if test == "create" else 0.0,
           "ctx": nrfiles if test == "unlink" else 2, "majf": 0, "minf": 34,
           "iodepth_level": {k: (100.0 if k == "1" else 0.0) for k in _DEPTHS},
           "iodepth_submit": {k: (100.0 if k == "4" else 0.0) for k in _SUBMIT},
           "iodepth_complete": {k: (100.0 if k == "4" else 0.0) for k in _SUBMIT},
           **_latency_buckets(0.0), "latency_depth": 1, "latency_target": 0, "latency_percentile": 100.0,
           "latency_window": 0}
    doc = _header(end, {"ioengine": engine, **({"create_on_open": "1"} if test == "create" else {})})
    doc["jobs"] = [job]
    if test != "create" and disks.device:
        doc["disk_util"] = [{**d, "read_ios": 0, "write_ios": 0, "util": 0.0} for d in disks.util(0, 0)[:1]]
    return dumps(doc)


# ---------------------------------------------------------------- dd and the shell loop


def _human(n: float, unit: str, base: int) -> str:
    """coreutils' short sizes: 17 MB, 4.3 GB, 16 MiB (one decimal below 10)."""
    prefixes = ("", "k" if base == 1000 else "Ki", "M" if base == 1000 else "Mi", "G" if base == 1000 else "Gi",
                "T" if base == 1000 else "Ti")
    value, i = float(n), 0
    while value >= base and i < len(prefixes) - 1:
        value, i = value / base, i + 1
    text = f"{value:.1f}" if value < 10 else f"{value:.0f}"
    return f"{text} {prefixes[i]}{unit}"


def dd_lines(nbytes: int, rate: float) -> list[str]:
    """What ``dd ... bs=1M`` prints on stderr for ``nbytes`` at ``rate`` B/s."""
    seconds = nbytes / rate
    blocks = nbytes >> 20
    return [f"{blocks}+0 records in", f"{blocks}+0 records out",
            f"{nbytes} bytes ({_human(nbytes, 'B', 1000)}, {_human(nbytes, 'B', 1024)}) copied, {seconds:.6g} s, "
            f"{_human(rate, 'B/s', 1000)}"]


def meta_loop_lines(files: int, ops: Sequence[tuple[str, float]]) -> list[str]:
    """The storage script's shell loop: ``meta OP files=N ns=T``."""
    return [f"meta {op} files={files} ns={int(files / rate * 1e9)}" for op, rate in ops]
