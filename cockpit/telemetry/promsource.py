"""GPU telemetry from a site's Prometheus (dcgm-exporter series), the "prometheus"
source beside nvidia-smi over SSH/srun.

    source = PrometheusTelemetry(PromSettings(url), Matching())
    reading = await source.read(["node01", "node02"])   # TelemetryReading, as probe.read_telemetry
    idle = await source.idle_gpus(5.0)                   # fleet-wide, only the idle GPUs come back

Each read is one query per kind (last values, sample ages, windowed counters),
aggregated on the server to the labels cockpit needs. A node with no series is
``errors[node] = "no series for node X"``, never 0 %; a GPU whose newest sample
is older than two scrape intervals is marked ``stale``. Prometheus down or slow
raises PrometheusError (the poller keeps the last values and backs off).
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from cockpit.models import gpus_by_node
from cockpit.telemetry import dcgm
from cockpit.telemetry.dcgm import Matching
from cockpit.telemetry.nvsmi import GpuTelemetry
from cockpit.telemetry.probe import TelemetryReading
from cockpit.telemetry.prometheus import PrometheusClient, PrometheusError, PromSettings, sample_value

Key = tuple[str, int]
_ATTR = {name: (attr, scale) for name, attr, scale, _, _ in dcgm.SERIES}
_INT_ATTRS = {"clock_event_reasons", "ecc_corr_volatile", "ecc_uncorr_volatile", "remapped_correctable",
              "remapped_uncorrectable", "xid_last", "xid_changes"}


def node_of(labels: dict[str, str], nodes: set[str], m: Matching) -> str | None:
    """The Slurm node a series belongs to: its node label, else ``instance`` without its port."""
    v = labels.get(m.node_label)
    if v in nodes:
        return v
    inst = labels.get("instance", "")
    host = inst[1:].split("]", 1)[0] if inst.startswith("[") else inst.rsplit(":", 1)[0] if inst.count(":") == 1 else inst
    return host if host in nodes else None


class _GpuIndex:
    """GPU label -> Slurm index: ``gpu`` is the index itself; UUID or pci_bus_id are
    numbered in PCI bus order per node (NVML's order, which Slurm's AutoDetect follows)."""

    def __init__(self, m: Matching) -> None:
        self.m = m
        self._seen: dict[str, dict[str, str]] = defaultdict(dict)  # node -> gpu label -> pci bus id

    def note(self, node: str, labels: dict[str, str]) -> None:
        if self.m.gpu_label != "gpu" and self.m.gpu_label in labels:
            self._seen[node][labels[self.m.gpu_label]] = labels.get("pci_bus_id", labels[self.m.gpu_label])

    def index(self, node: str, labels: dict[str, str]) -> int | None:
        raw = labels.get(self.m.gpu_label)
        if raw is None:
            return None
        if self.m.gpu_label == "gpu":
            return int(raw) if raw.isdigit() else None
        order = sorted(self._seen[node], key=lambda g: self._seen[node][g].lower())
        return order.index(raw) if raw in order else None


@dataclass
class _Acc:
    vals: dict = field(default_factory=dict)
    job: str | None = None


def _values(result: list[dict], nodes: set[str], m: Matching) -> dict[Key, _Acc]:
    gi = _GpuIndex(m)
    rows = [(node_of(r.get("metric", {}), nodes, m), r) for r in result]
    for node, r in rows:
        if node:
            gi.note(node, r["metric"])
    out: dict[Key, _Acc] = defaultdict(_Acc)
    for node, r in rows:
        labels = r.get("metric", {})
        idx = gi.index(node, labels) if node else None
        if idx is None:
            continue
        acc = out[(node, idx)]
        if labels.get(m.job_label):
            acc.job = labels[m.job_label]
        name = labels.get("m", "")
        val = sample_value((r.get("value") or [None, None])[1])
        if name in _ATTR and val is not None:
            attr, scale = _ATTR[name]
            acc.vals[attr] = val * scale
        elif name and val is not None:  # windowed labels
            acc.vals[name] = val
        acc.vals.setdefault("_names", set()).add(name)
    return out


def _telemetry(idx: int, acc: _Acc, age: float | None, stale_after: float) -> GpuTelemetry:
    v = dict(acc.vals)
    names = v.pop("_names", set())
    for attr in _INT_ATTRS & v.keys():
        v[attr] = int(v[attr])
    if "remapped_failure" in v:
        v["remapped_failure"] = v["remapped_failure"] > 0
    if v.get("mem_total_mib") is None and v.get("mem_used_mib") is not None and v.get("mem_free_mib") is not None:
        v["mem_total_mib"] = v["mem_used_mib"] + v["mem_free_mib"]
    missing = tuple(n for n in dcgm.INSTANT_NAMES if n not in names)
    known = {f for f in GpuTelemetry.__dataclass_fields__}
    v = {k: val for k, val in v.items() if k in known}
    stale = age is not None and age > stale_after
    return GpuTelemetry(index=idx, missing=missing, source="prometheus", stale=stale, age_s=age, job_label=acc.job, **v)


class PrometheusTelemetry:
    """Reads the nodes' GPUs from Prometheus; the TUI's poller and ``cockpit gpus`` call it."""

    def __init__(self, settings: PromSettings, matching: Matching | None = None, *, scrape_interval: float = 30.0,
                 window_s: int = 300, clock: Callable[[], float] = time.time) -> None:
        self.settings, self.matching = settings, matching or Matching()
        self.scrape_interval, self.window_s, self.clock = scrape_interval, window_s, clock
        self.client = PrometheusClient(settings)
        self.description = f"Prometheus at {settings.shown_url}"
        self.available, self.why_not = True, ""

    async def read(self, nodes: Sequence[str]) -> TelemetryReading:
        """The last values of these nodes' GPUs. Raises PrometheusError when Prometheus fails."""
        nodes = sorted(set(nodes))
        if not nodes:
            return TelemetryReading({}, {})
        m = self.matching
        values, ages, window = await asyncio.gather(
            self.client.query(dcgm.instant_query(nodes, m)), self.client.query(dcgm.age_query(nodes, m)),
            self.client.query(dcgm.window_query(nodes, m, self.window_s)))
        wanted = set(nodes)
        accs = _values(values + window, wanted, m)
        now = self.clock()
        newest = {}
        gi = _GpuIndex(m)
        for r in ages:
            node = node_of(r.get("metric", {}), wanted, m)
            if node:
                gi.note(node, r["metric"])
        for r in ages:
            node = node_of(r.get("metric", {}), wanted, m)
            idx = gi.index(node, r["metric"]) if node else None
            ts = sample_value((r.get("value") or [None, None])[1])
            if idx is not None and ts is not None:
                newest[(node, idx)] = max(ts, newest.get((node, idx), 0.0))
        out = {k: _telemetry(k[1], a, (now - newest[k]) if k in newest else None, 2 * self.scrape_interval)
               for k, a in accs.items() if a.vals.get("_names", set()) & set(dcgm.INSTANT_NAMES)}
        seen = {k[0] for k in out}
        errors = {n: f"no series for node {n} in {self.description} (matched by {m.node_label} or instance)"
                  for n in nodes if n not in seen}
        return TelemetryReading(out, errors)

    async def node_summary(self, nodes: Sequence[str]) -> dict[str, dict[str, float]]:
        """node -> {util_min, util_avg, temp_max, power_sum}, aggregated on the server."""
        result = await self.client.query(dcgm.node_summary_query(sorted(set(nodes)), self.matching))
        out: dict[str, dict[str, float]] = defaultdict(dict)
        for r in result:
            node = node_of(r.get("metric", {}), set(nodes), self.matching)
            val = sample_value((r.get("value") or [None, None])[1])
            if node and val is not None:
                out[node][r["metric"].get("m", "")] = val
        return dict(out)

    async def job_summary(self, jobs: dict[str, dict[str, Sequence[int]]]) -> dict[str, dict[str, float]]:
        """job id -> {util_avg, util_min, gpus} over the job's GPUs (node -> Slurm indexes),
        aggregated on the server: one query for every job shown, a few bytes per job. A job
        none of whose GPUs has a series is absent (never 0 %)."""
        if not jobs:
            return {}
        result = await self.client.query(dcgm.job_summary_query(jobs, self.matching))
        out: dict[str, dict[str, float]] = defaultdict(dict)
        for r in result:
            labels = r.get("metric", {})
            val = sample_value((r.get("value") or [None, None])[1])
            if labels.get("job") in jobs and val is not None:
                out[labels["job"]][labels.get("m", "")] = val
        return dict(out)

    async def idle_gpus(self, threshold: float = 5.0) -> dict[Key, float]:
        """(node, index) -> utilisation of every GPU in the fleet below ``threshold`` % now:
        one query, one series per idle GPU (a GPU without series is never in it).

        Measured at 10,000 nodes x 8 GPUs all idle (bench/bench_prometheus.py), against a
        form that returns one series per fully idle node and per-GPU only for partly idle
        ones: this one took 1.0 s and 0.9 s of Prometheus CPU, that one 2.8 s and 5.3 s. Its
        subqueries select the 80,000 series five times; the 8 MB of JSON here cross the wire
        as 223 KiB gzipped."""
        result = await self.client.query(dcgm.idle_query(self.matching, threshold))
        out = {}
        for r in result:
            labels = r.get("metric", {})
            node = labels.get(self.matching.node_label) or labels.get("instance", "").rsplit(":", 1)[0]
            idx = labels.get("gpu", "")
            val = sample_value((r.get("value") or [None, None])[1])
            if node and idx.isdigit() and val is not None:
                out[(node, int(idx))] = val
        return out

    async def gpu_history(self, gpus: dict[str, Sequence[int]], start: float, end: float,
                          name: str = dcgm.UTIL, job_label: tuple[str, str] | None = None) -> dict[Key, list[tuple[float, float]]]:
        """``query_range`` of one series per GPU over [start, end]: (node, index) -> [(t, value)].
        An empty index list means every GPU of that node; ``job_label`` (label, value) narrows it."""
        # ~200 points per GPU whatever the run's length; a short run still gets several (a
        # step of one scrape interval put the only evaluation of a 4 s job before its first sample)
        step = max(1.0, (end - start) / 200.0)
        query = dcgm.job_gpus_query(gpus, self.matching, name, job_label)
        result = await self.client.query_range(query, start, end, step)
        out: dict[Key, list[tuple[float, float]]] = {}
        for r in result:
            labels = r.get("metric", {})
            node = node_of(labels, set(gpus), self.matching)
            idx = labels.get("gpu", "")
            if not node or not idx.isdigit():
                continue
            pts = [(float(t), v) for t, raw in r.get("values", []) if (v := sample_value(raw)) is not None]
            out[(node, int(idx))] = pts
        return out

    async def node_series(self, node: str, seconds: float = 3600.0) -> dict[str, dict[int, list[tuple[float, float]]]]:
        """The node's DCGM series over its last ``seconds`` (``query_range``): series name ->
        GPU index -> [(t, value)], for the runbooks' evidence beside dmesg. Raises PrometheusError."""
        end = self.clock()
        step = max(self.scrape_interval, seconds / 240.0)
        result = await self.client.query_range(dcgm.node_history_query(node, self.matching), end - seconds, end, step)
        out: dict[str, dict[int, list[tuple[float, float]]]] = defaultdict(dict)
        for r in result:
            labels = r.get("metric", {})
            idx = labels.get("gpu", "")
            if node_of(labels, {node}, self.matching) != node or not idx.isdigit():
                continue
            pts = [(float(t), v) for t, raw in r.get("values", []) if (v := sample_value(raw)) is not None]
            out[labels.get("m", "")][int(idx)] = pts
        return dict(out)

    async def close(self) -> None:
        await self.client.close()


def job_label_disagreements(readings: dict[Key, GpuTelemetry], owners: dict) -> list[str]:
    """Where dcgm-exporter's job-mapping label and Slurm disagree on who holds a GPU (one line each)."""
    out = []
    for key, t in sorted(readings.items()):
        if t.job_label is None:
            continue
        job = owners.get(key)
        slurm = str(job.job_id) if job is not None else None
        if t.job_label != slurm and not (job is not None and t.job_label == job.display_id):
            out.append(f"{key[0]} GPU {key[1]}: dcgm-exporter says job {t.job_label}, "
                       f"Slurm says {'job ' + slurm if slurm else 'no job'}")
    return out


def with_stale(reading: TelemetryReading) -> TelemetryReading:
    """The same reading with every GPU marked stale (the last values kept after a failed read)."""
    return TelemetryReading({k: replace(v, stale=True) for k, v in reading.readings.items()}, dict(reading.errors))


def prometheus_source(config, clock: Callable[[], float] = time.time) -> PrometheusTelemetry | None:
    """The Prometheus source that ``config`` ([telemetry], --prometheus) asks for, or None.
    Raises ConfigError for a URL that is not http(s) or unreadable credentials."""
    from urllib.parse import urlsplit

    from cockpit.errors import ConfigError

    t = config.telemetry
    if not t.prometheus_url:
        return None
    parts = urlsplit(t.prometheus_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"Prometheus URL must be http(s)://host[:port][/path], got {t.prometheus_url!r}")
    if parts.username or parts.password:
        raise ConfigError("Prometheus URL must not carry credentials; use [telemetry] prometheus_token_file "
                          "or prometheus_basic_auth_file")
    settings = PromSettings(t.prometheus_url, t.prometheus_token_file, t.prometheus_basic_auth_file,
                            t.prometheus_tls_verify, t.prometheus_ca_file, t.prometheus_timeout,
                            max(1, t.prometheus_concurrency))
    matching = Matching(t.node_label or "Hostname", t.gpu_label or "gpu", t.job_label)
    return PrometheusTelemetry(settings, matching, scrape_interval=t.scrape_interval or 30.0,
                               window_s=t.window or 300, clock=clock)


async def job_gpu_history(source: PrometheusTelemetry, job_id: str, nodes: Sequence[str], start: float,
                          end: float) -> tuple[dict[Key, list[tuple[float, float]]], str]:
    """A finished job's GPUs' utilisation over its run, and how they were picked. sacct
    keeps no GPU indexes, so: the GPUs dcgm-exporter's job-mapping label names, where it is
    exported, else every GPU of the job's nodes (said, since a shared node mixes jobs)."""
    if not nodes or end <= start:
        return {}, ""
    label = source.matching.job_label
    if label:
        hist = await source.gpu_history({n: () for n in nodes}, start, end, job_label=(label, job_id))
        if hist:
            return hist, f"the GPUs dcgm-exporter's {label} label gives job {job_id}"
    hist = await source.gpu_history({n: () for n in nodes}, start, end)
    return hist, "every GPU of the job's nodes (accounting keeps no GPU indexes; a shared node mixes jobs)"


async def finished_job_history(config, job) -> tuple[dict[Key, list[tuple[float, float]]], str]:
    """For ``cockpit job ID`` and the history screen: the job's GPU history from the
    configured Prometheus, or ({}, why) when there is none to ask or it cannot answer
    (the efficiency then falls back to sacct and says why)."""
    source = prometheus_source(config)
    if source is None or not job.gpus or not job.start_time:
        return {}, ""
    try:
        return await job_gpu_history(source, str(job.job_id), job.nodes, float(job.start_time),
                                     float(job.end_time or time.time()))
    except PrometheusError as exc:
        return {}, str(exc)
    finally:
        await source.close()


async def running_job_use(config, job) -> tuple[dict[str, float] | None, str]:
    """A running job's GPU use now (``util_avg``, ``util_min``, ``gpus`` reporting) over
    its GPUs on every node, aggregated on the server (``job_summary``: one query, a few
    bytes), with where it came from; (None, why) when nothing could say. ``job``: the live
    Slurm record (its GPU indexes per node). Never 0 % for GPUs without series."""
    source = prometheus_source(config)
    if source is None:
        return None, ""
    gpus = {n: g.indexes for n, g in gpus_by_node(job.gpus).items() if n}  # every type's on a node
    try:
        if not gpus:
            return None, f"Slurm gives job {job.job_id} no GPUs"
        got = (await source.job_summary({str(job.job_id): gpus})).get(str(job.job_id))
        if not got:
            return None, f"no series for job {job.job_id}'s GPUs in {source.description}"
        whole = sorted(n for n, idx in gpus.items() if not idx)  # Slurm named no indexes there
        return got, source.description + (f"; every GPU of {', '.join(whole)} (Slurm gave no GPU indexes)"
                                          if whole else "")
    except PrometheusError as exc:
        return None, str(exc)
    finally:
        await source.close()


class NodeSeriesFacade:
    """``CheckContext.gpu_series`` for plugins: one short-lived client per call, so a
    check that never asks opens nothing and nothing is left to close."""

    def __init__(self, config) -> None:
        self.config = config
        self.description = f"Prometheus at {config.telemetry.prometheus_url}"

    async def node_series(self, node: str, seconds: float = 3600.0) -> dict[str, dict[int, list[tuple[float, float]]]]:
        source = prometheus_source(self.config)
        if source is None:
            return {}
        try:
            return await source.node_series(node, seconds)
        finally:
            await source.close()


def gpu_series_for(config) -> NodeSeriesFacade | None:
    """The plugin facade where a Prometheus is configured, else None."""
    return NodeSeriesFacade(config) if config.telemetry.prometheus_url else None


MAX_UTIL_JOBS = 500  # jobs asked about per report (the largest by GPU-hours): one small query each


def job_utils_provider(config):
    """For core.utilization: ``await provider(jobs, start, end)`` -> ({job id: mean GPU %
    over its run inside the window}, how), from the configured Prometheus; None without one.
    One instant ``avg_over_time`` query per job (at most MAX_UTIL_JOBS, said), bounded concurrency."""
    if not config.telemetry.prometheus_url:
        return None

    async def provider(jobs, start: float, end: float) -> tuple[dict, str]:
        source = prometheus_source(config)
        assert source is not None
        todo = sorted((j for j in jobs if j.gpus and j.nodes and j.start_time),
                      key=lambda j: -j.gpus * max(j.elapsed_s, 1))
        asked = todo[:MAX_UTIL_JOBS]
        try:
            values = await asyncio.gather(*(_job_mean(source, j, start, end) for j in asked))
        except PrometheusError as exc:
            return {}, str(exc)
        finally:
            await source.close()
        utils = {j.job_id: v for j, v in zip(asked, values) if v is not None}
        more = f", the {len(asked)} largest of {len(todo)}" if len(todo) > len(asked) else ""
        return utils, f"Prometheus DCGM_FI_DEV_GPU_UTIL mean over each run (every GPU of its nodes{more})"
    return provider


async def _job_mean(source: PrometheusTelemetry, job, start: float, end: float) -> float | None:
    t0, t1 = max(float(job.start_time), start), min(float(job.end_time or end), end)
    if t1 <= t0:
        return None
    inner = dcgm.job_gpus_query({n: () for n in job.nodes}, source.matching)
    span = max(int(t1 - t0), 1)
    step = max(span // 100, 1)  # ~100 points per run (a scrape-interval step can miss a short run)
    result = await source.client.query(f"avg(avg_over_time(({inner})[{span}s:{step}s]))", at=t1)
    return sample_value(result[0]["value"][1]) if result else None
