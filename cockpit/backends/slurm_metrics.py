"""Read Slurm 25.11+'s built-in OpenMetrics endpoint (slurmctld serves
``/metrics/scheduler`` on its own port when ``MetricsType=metrics/openmetrics``).
The maintainers of the Prometheus exporters call it the preferred source of
controller statistics (rivosinc/prometheus-slurm-exporter#132)."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request

from cockpit.backends.slurm_sdiag import SchedStats, parse_metrics_scheduler
from cockpit.errors import BackendError


def _get(url: str, timeout: float) -> str:
    if not url.startswith(("http://", "https://")):
        raise BackendError(f"--metrics-url: not an http(s) URL: {url[:80]!r}")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (scheme checked above)
            return resp.read(8 << 20).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        raise BackendError(f"{url}: HTTP {exc.code} {exc.reason} (is MetricsType=metrics/openmetrics set?)") from None
    except (urllib.error.URLError, OSError) as exc:
        raise BackendError(f"{url}: {getattr(exc, 'reason', exc)}") from None


async def fetch_scheduler_metrics(url: str, timeout: float = 10.0) -> SchedStats:
    """GET ``url`` (e.g. http://ctld:6817/metrics/scheduler) and read it.
    Raises BackendError when it cannot be fetched, ParseError when it is not that endpoint."""
    text = await asyncio.to_thread(_get, url, timeout)
    return parse_metrics_scheduler(text)
