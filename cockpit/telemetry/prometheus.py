"""A small async client for the Prometheus HTTP API (``/api/v1/query`` and
``/api/v1/query_range``), as a good citizen of a shared Prometheus uses it.

* gzip: asked for on every request (httpx sends ``Accept-Encoding: gzip`` and
  decodes); at 80,000 DCGM series a per-GPU answer is 13.2 MB of JSON, so the
  queries aggregate on the server and only the answer's bytes cross the wire.
* bounded: one connection pool, ``max_concurrency`` requests at once, a timeout
  on each; a failed request raises :class:`PrometheusError` (one line, naming the URL).
* credentials from a file only (a bearer token, or ``user:password`` for basic
  auth), refused when the file is readable by group or others (as ssh refuses a
  loose key); the secret never appears in argv, a message or a log.

Raises PrometheusError (a BackendError: exit 3) for an unreachable or failing
server, and for an answer that is not the API's JSON.
"""

from __future__ import annotations

import asyncio
import math
import os
import stat
from dataclasses import dataclass
from typing import Any

from cockpit.errors import BackendError, ConfigError

# Values DCGM uses for "blank" (not supported / not available), which dcgm-exporter
# prints as plain numbers: DCGM_INT64_BLANK 0x7ffffff0 and up, DCGM_INT32_BLANK 0x7ffffff0,
# DCGM_FP64_BLANK 140737488355328.0 (dcgm_structs.h); the README's MEMORY_TEMP shows
# 9223372036854775794. None of them is a reading.
_BLANK_MIN_INT64 = 9223372036854775792.0
_BLANK_INT32 = (2147483632.0, 2147483633.0, 2147483634.0, 2147483635.0)
_BLANK_FP64 = 140737488355328.0


class PrometheusError(BackendError):
    """Prometheus could not be asked, or answered with an error."""


@dataclass(frozen=True)
class PromSettings:
    """Where Prometheus is and how to reach it (from [telemetry] or --prometheus)."""

    url: str
    token_file: str = ""
    basic_auth_file: str = ""
    tls_verify: bool = True
    ca_file: str = ""
    timeout: float = 10.0
    max_concurrency: int = 4

    @property
    def shown_url(self) -> str:
        """The URL without any user:password part (never shown or logged)."""
        head, sep, rest = self.url.partition("://")
        return f"{head}{sep}{rest.rsplit('@', 1)[-1]}" if sep else self.url


def read_secret(path: str, what: str) -> str:
    """The first line of a credentials file. Raises ConfigError when the file is
    missing, empty, or readable by group or others (it names the file, never its content)."""
    p = os.path.expanduser(path)
    try:
        st = os.stat(p)
        if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(f"{what} {path} is readable by others (mode {stat.S_IMODE(st.st_mode):04o}); "
                              f"chmod 600 it, as ssh requires for a key")
        with open(p, encoding="utf-8") as fh:
            line = fh.readline().strip()
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from None
    if not line:
        raise ConfigError(f"{what} {path} is empty")
    return line


def _auth(settings: PromSettings) -> tuple[dict[str, str], Any]:
    if settings.token_file and settings.basic_auth_file:
        raise ConfigError("set one of [telemetry] prometheus_token_file and prometheus_basic_auth_file, not both")
    if settings.token_file:
        return {"Authorization": f"Bearer {read_secret(settings.token_file, 'Prometheus token file')}"}, None
    if settings.basic_auth_file:
        user, sep, password = read_secret(settings.basic_auth_file, "Prometheus basic-auth file").partition(":")
        if not sep:
            raise ConfigError(f"Prometheus basic-auth file {settings.basic_auth_file} must hold user:password")
        return {}, (user, password)
    return {}, None


def sample_value(raw: str) -> float | None:
    """A sample's value as Prometheus sends it (a string), or None for NaN, ±Inf and
    DCGM's blanks: an unreadable value is "not reported", never zero."""
    try:
        v = float(raw)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(v) or v >= _BLANK_MIN_INT64 or v in _BLANK_INT32 or v == _BLANK_FP64:
        return None
    return v


@dataclass
class Traffic:
    """What this client cost so far: requests, bytes on the wire and decoded, seconds."""

    requests: int = 0
    wire_bytes: int = 0
    body_bytes: int = 0
    seconds: float = 0.0


class PrometheusClient:
    """``await client.query(promql)`` -> the ``data.result`` list; ``query_range`` likewise."""

    def __init__(self, settings: PromSettings, *, transport: Any = None) -> None:
        import httpx  # here, so that commands without Prometheus never import it

        headers, auth = _auth(settings)
        verify: Any = settings.tls_verify
        if settings.tls_verify and settings.ca_file:
            import ssl  # a context, not a path: httpx deprecates verify=<str>

            try:
                verify = ssl.create_default_context(cafile=os.path.expanduser(settings.ca_file))
            except (OSError, ssl.SSLError) as exc:
                raise ConfigError(f"cannot read the Prometheus CA file {settings.ca_file}: {exc}") from None
        self.settings = settings
        self.traffic = Traffic()
        self._sem = asyncio.Semaphore(max(1, settings.max_concurrency))
        limits = httpx.Limits(max_connections=max(1, settings.max_concurrency))
        self._http = httpx.AsyncClient(
            base_url=settings.url.rstrip("/"), headers={"Accept-Encoding": "gzip", **headers}, auth=auth,
            verify=verify, timeout=settings.timeout, limits=limits, transport=transport, trust_env=False)

    async def query(self, promql: str, *, at: float | None = None) -> list[dict]:
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return await self._get("/api/v1/query", params)

    async def query_range(self, promql: str, start: float, end: float, step: float) -> list[dict]:
        params = {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{max(step, 1.0):g}"}
        return await self._get("/api/v1/query_range", params)

    async def _get(self, path: str, params: dict[str, str]) -> list[dict]:
        import time

        import httpx

        where = self.settings.shown_url
        t0 = time.monotonic()
        async with self._sem:
            try:
                # POST form: long selectors (hundreds of node names) stay out of URL limits
                resp = await self._http.post(path, data=params)
            except httpx.TimeoutException:
                raise PrometheusError(f"Prometheus at {where} did not answer within {self.settings.timeout:g} s") from None
            except httpx.HTTPError as exc:
                raise PrometheusError(f"Prometheus at {where} unreachable: {type(exc).__name__}: {exc}") from None
        self.traffic.requests += 1
        self.traffic.wire_bytes += resp.num_bytes_downloaded  # compressed, as it crossed the wire
        self.traffic.body_bytes += len(resp.content)
        self.traffic.seconds += time.monotonic() - t0
        return _result(resp, where)

    async def close(self) -> None:
        await self._http.aclose()


def _result(resp: Any, where: str) -> list[dict]:
    if resp.status_code in (401, 403):
        # Prometheus' web config answers plain text here: say what it means, never the secret
        raise PrometheusError(f"Prometheus at {where} refused the credentials (HTTP {resp.status_code}): check "
                              "[telemetry] prometheus_basic_auth_file or prometheus_token_file")
    try:
        body = resp.json()
    except ValueError:
        raise PrometheusError(f"Prometheus at {where} answered HTTP {resp.status_code} with no API JSON "
                              f"(is the URL Prometheus' own?)") from None
    if not isinstance(body, dict) or body.get("status") != "success":
        err = body.get("error") if isinstance(body, dict) else None
        raise PrometheusError(f"Prometheus at {where} refused the query (HTTP {resp.status_code}): {err or body!r:.200}")
    result = (body.get("data") or {}).get("result")
    if not isinstance(result, list):
        raise PrometheusError(f"Prometheus at {where} answered without data.result")
    return result
