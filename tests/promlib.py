"""A real Prometheus on loopback for the telemetry tests and the bench, scraping the
dcgm-exporter STAND-IN below.

The stand-in is not dcgm-exporter (there is no GPU here): it serves REAL recorded
dcgm-exporter ``/metrics`` outputs (tests/data/dcgm, SOURCES.md there), one per
node at ``/metrics/<node>``, with only the ``Hostname`` label rewritten to the test
cluster's node name. Prometheus is Debian's binary, started as a plain process on
127.0.0.1 with its own temp data dir and a free port, and stopped by its PID.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

DATA = Path(__file__).parent / "data" / "dcgm"
# node -> recording. node04's recording has no Hostname label: it is matched by instance.
RECORDINGS = {
    "node01": "h100-8gpu-gpu-node-1-580.105.08-sampled.prom",
    "node02": "rtx6000ada-1gpu-aiperf-fixture.prom",
    "node03": "v100-4gpu-r6i3n0-issue250-EXCERPT.prom",
    "node04": "readme-quickstart-1gpu-blank-memory-temp.prom",
}
_HOSTNAME = re.compile(r'Hostname="[^"]*"')


def relabelled(name: str, node: str) -> str:
    """A recording with its Hostname label set to ``node`` (nothing else changes)."""
    return _HOSTNAME.sub(f'Hostname="{node}"', (DATA / name).read_text())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StandIn:
    """The dcgm-exporter stand-in: ``pages`` maps a node to its /metrics text (changeable)."""

    def __init__(self, pages: dict[str, str], port: int | None = None) -> None:
        self.pages = dict(pages)
        self.port = port or free_port()  # a port again: the exporter restarted where it was
        standin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                node = self.path.rsplit("/", 1)[-1]
                body = standin.pages.get(node)
                if body is None:
                    self.send_error(404)
                    return
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # quiet
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def scrape_config(standin: StandIn, nodes: list[str], interval: str = "1s", by_instance: tuple[str, ...] = ("node04",)) -> str:
    """One scrape job per node. ``by_instance`` nodes (no Hostname label in their recording)
    get the ``instance`` label ``NODE:9400``, as a site that names targets by host has."""
    jobs = []
    for node in nodes:
        labels = f"\n        labels: {{instance: '{node}:9400'}}" if node in by_instance else ""
        jobs.append(f"""  - job_name: dcgm-{node}
    scrape_interval: {interval}
    metrics_path: /metrics/{node}
    static_configs:
      - targets: ['127.0.0.1:{standin.port}']{labels}""")
    return "global:\n  scrape_interval: " + interval + "\nscrape_configs:\n" + "\n".join(jobs) + "\n"


class Prometheus:
    """Debian's prometheus on 127.0.0.1:<free port>, data in ``datadir``; stop() by PID."""

    def __init__(self, config_text: str, datadir: Path, *, extra: list[str] | None = None,
                 web: WebConfig | None = None) -> None:
        self.binary = shutil.which("prometheus")
        if self.binary is None:
            raise RuntimeError("prometheus is not installed (apt-get install prometheus)")
        datadir.mkdir(parents=True, exist_ok=True)
        self.config = datadir / "prometheus.yml"
        self.config.write_text(config_text)
        self.port = free_port()
        self.web = web
        self.url = f"{'https' if web and web.cert else 'http'}://127.0.0.1:{self.port}"
        if web is not None:
            extra = [*(extra or []), f"--web.config.file={web.write(datadir)}"]
        self.log = open(datadir / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            [self.binary, f"--config.file={self.config}", f"--storage.tsdb.path={datadir / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=30d",
             *(extra or [])],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def api(self, path: str, **params: str) -> dict:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        with self._open(url, 10) as resp:
            return json.loads(resp.read())

    def _open(self, url: str, timeout: float):
        """urlopen with the web config's CA and user, where it has them (loopback only)."""
        if self.web is None:
            return urllib.request.urlopen(url, timeout=timeout)  # noqa: S310 - loopback
        return urllib.request.urlopen(self.web.request(url), timeout=timeout,  # noqa: S310
                                      context=self.web.ssl_context())

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited {self.proc.returncode}: see {self.log.name}")
            try:
                with self._open(f"{self.url}/-/ready", 2):
                    return
            except OSError:
                time.sleep(0.1)  # polling a process that is starting; the deadline only guards a hang
        raise RuntimeError(f"prometheus not ready within {timeout:g} s")

    def wait_series(self, promql: str, count: int, timeout: float = 60.0) -> None:
        """Wait until ``promql`` returns at least ``count`` series (the first scrapes landed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.api("/api/v1/query", query=promql)["data"]["result"]) >= count:
                return
            time.sleep(0.2)
        raise RuntimeError(f"{promql!r} did not reach {count} series within {timeout:g} s")

    def cpu_seconds(self) -> float:
        """User+system CPU the Prometheus process has used so far (from /proc)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # by PID: this process only
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class WebConfig:
    """Prometheus' ``--web.config.file``: TLS with a self-signed certificate for 127.0.0.1
    (made with openssl) and basic auth with a bcrypt hash (the libc's crypt, $2b$)."""

    def __init__(self, tmp: Path, *, tls: bool = True, users: dict[str, str] | None = None) -> None:
        self.users = dict(users or {})
        self.cert = self.key = None
        if tls:
            self.cert, self.key = tmp / "cert.pem", tmp / "key.pem"
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                            "-keyout", str(self.key), "-out", str(self.cert)], check=True, capture_output=True, timeout=60)

    @staticmethod
    def bcrypt(password: str) -> str:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import crypt  # removed in Python 3.13: the test skips there

        return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))

    def write(self, datadir: Path) -> Path:
        lines = []
        if self.cert:
            lines += ["tls_server_config:", f"  cert_file: {self.cert}", f"  key_file: {self.key}"]
        if self.users:
            lines += ["basic_auth_users:"] + [f"  {u}: '{self.bcrypt(p)}'" for u, p in self.users.items()]
        path = datadir / "web.yml"
        path.write_text("\n".join(lines) + "\n")
        return path

    def request(self, url: str) -> urllib.request.Request:
        import base64

        req = urllib.request.Request(url)
        if self.users:
            user, password = next(iter(self.users.items()))
            req.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
        return req

    def ssl_context(self):
        import ssl

        return ssl.create_default_context(cafile=str(self.cert)) if self.cert else None


def openmetrics_history(pages: dict[str, str], start: float, end: float, step: float) -> str:
    """OpenMetrics text for ``promtool tsdb create-blocks-from openmetrics``: every
    sample of the recordings repeated at ``step`` from ``start`` to ``end`` (history
    built from the same recordings, values as recorded)."""
    series: dict[str, list[str]] = {}
    for text in pages.values():
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            head, value = line.rsplit(" ", 1)
            name = head.split("{", 1)[0]
            series.setdefault(name, []).append(f"{head.replace(', ', ',')} {value}")
    out = []
    for name, lines in series.items():
        out.append(f"# TYPE {name} gauge")
        t = start
        while t <= end:
            out.extend(f"{ln} {t:.3f}" for ln in lines)
            t += step
    out.append("# EOF")
    return "\n".join(out) + "\n"


def create_blocks(openmetrics: str, tsdb: Path) -> None:
    """promtool tsdb create-blocks-from openmetrics into ``tsdb`` (Prometheus' data dir)."""
    src = tsdb.parent / "history.om"
    src.write_text(openmetrics)
    tsdb.mkdir(parents=True, exist_ok=True)
    subprocess.run([shutil.which("promtool") or "promtool", "tsdb", "create-blocks-from", "openmetrics",
                    str(src), str(tsdb)], check=True, capture_output=True, timeout=300)


_GPU = re.compile(r'[{,]\s*gpu="(\d+)"')


def recorded_series(name: str, end: float, seconds: float = 3600.0, step: float = 15.0) -> dict[str, dict[int, list]]:
    """A recording as ``PrometheusTelemetry.node_series`` returns it when the stand-in has
    served that page at every ``step`` over the last ``seconds``: series name -> GPU index ->
    [(t, value)], the value as recorded at each step. Several series of one GPU (MIG
    instances) become one by their maximum, as ``node_history_query``'s ``max by (gpu)``;
    DCGM's blanks are dropped, as the client drops them (``sample_value``)."""
    from cockpit.telemetry.prometheus import sample_value

    last: dict[tuple[str, int], float] = {}
    for line in (DATA / name).read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        head, raw = line.rsplit(" ", 1)
        gpu, value = _GPU.search(head), sample_value(raw)
        if gpu is None or value is None:
            continue
        key = (head.split("{", 1)[0], int(gpu.group(1)))
        last[key] = max(value, last.get(key, value))
    times = [end - seconds + k * step for k in range(int(seconds // step) + 1)]
    out: dict[str, dict[int, list]] = {}
    for (metric, gpu), value in last.items():
        out.setdefault(metric, {})[gpu] = [(t, value) for t in times]
    return out
