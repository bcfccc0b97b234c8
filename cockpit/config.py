"""TOML config: discovery, strict validation, frozen dataclasses.

Search order: ``--config``, ``$COCKPIT_CONFIG``, ``$XDG_CONFIG_HOME/cockpit/config.toml``,
``/etc/cockpit/config.toml``; none found means defaults. Every field has a
docstring-like ``doc`` in its metadata; ``config.example.toml`` shows each key
with its default (a test keeps the two in step). Errors name the file and key.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from cockpit.entrypoints import backend_names
from cockpit.errors import ConfigError
from cockpit.paths import config_home

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SYSTEM_CONFIG = Path("/etc/cockpit/config.toml")


def _f(default: Any, doc: str):
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True)
class General:
    backend: str = _f("auto", "Data source: auto, slurm-cli, pyslurm or demo. auto picks pyslurm only where it imports and matches the cluster's Slurm version.")
    read_only: bool = _f(False, "Refuse every action (jobs, nodes, plugins). --read-only sets it too.")
    audit_log: str = _f("", "JSON Lines audit file; empty = $XDG_STATE_HOME/cockpit/audit.jsonl.")
    demo_audit_log: str = _f("", "The demo's own audit file (--demo never writes audit_log); empty = $XDG_STATE_HOME/cockpit/demo-audit.jsonl.")
    host: str = _f("", "Run Slurm commands on this host over SSH (a login node); empty = locally.")
    command_timeout: float = _f(30.0, "Seconds before a Slurm command is given up.")
    slurm_bin_dir: str = _f("", "Directory holding squeue/sinfo/scontrol; empty = PATH.")


@dataclass(frozen=True)
class Refresh:
    nodes: float = _f(5.0, "Seconds between node refreshes (raised to 5x the last fetch's duration).")
    jobs: float = _f(5.0, "Seconds between job refreshes (adaptive as above).")
    partitions: float = _f(30.0, "Seconds between partition refreshes.")
    topology: float = _f(300.0, "Seconds between topology refreshes.")
    telemetry: float = _f(15.0, "Seconds between GPU telemetry polls of the nodes in view.")
    flapping: float = _f(600.0, "Seconds between reads of every node's drain/down events from accounting (one sacctmgr query), for the Nodes view's flapping mark; 0 = never.")


@dataclass(frozen=True)
class Ssh:
    config_file: str = _f("~/.ssh/config", "OpenSSH client config to read (Host, HostName, User, Port, IdentityFile, ProxyJump).")
    known_hosts: str = _f("~/.ssh/known_hosts", "known_hosts file used for host key checking.")
    strict_host_key_checking: bool = _f(True, "Refuse unknown or changed host keys. Setting false is visible in the header and logged.")
    connect_timeout: float = _f(10.0, "Seconds to wait for an SSH connection.")
    command_timeout: float = _f(30.0, "Seconds to wait for a remote command.")
    keepalive_interval: float = _f(15.0, "Seconds between SSH keepalives.")
    fanout_window: int = _f(64, "Concurrent SSH sessions during fan-out.")
    jump_host: str = _f("", "Reach compute nodes through this host (ProxyJump); empty = direct or as ssh config says.")
    user: str = _f("", "Remote user; empty = ssh config or the local user.")
    remote_path_prepend: str = _f("", "Directories put before PATH for commands run on nodes (e.g. where nvidia-smi lives); empty = the remote default PATH.")


@dataclass(frozen=True)
class Tui:
    theme: str = _f("textual-dark", "Textual theme name.")
    max_cell_width: int = _f(40, "Where a table's columns do not all fit, a column is cut to this width (with an ellipsis) before the others scroll; while width is free, values are shown whole.")
    telemetry: bool = _f(True, "Poll live GPU telemetry (nvidia-smi through the backend's probe runner: SSH to the nodes, or the demo's simulated nodes) for the nodes in view, every [refresh] telemetry seconds; on a real cluster only when SSH reaches the nodes ([general] host, [ssh] jump_host or an ssh config file); false turns it off.")
    watch_output: int = _f(60, "Seconds between looks at the output files of the running jobs (the largest 256 by GPUs): the jobs view's LAST OUT and the Pulse's suspects. Read here where readable, else with stat on the job's batch host through the probe runner; 0 turns it off.")
    silent_after: int = _f(600, "A running job whose output has not changed for this many seconds is listed as a suspect on the Pulse.")
    hidden_columns_nodes: str = _f("", "Columns the Nodes view hides, comma-separated labels (the column chooser, C, writes it); empty = none.")
    hidden_columns_gpus: str = _f("", "Columns the GPUs view hides (as hidden_columns_nodes).")
    hidden_columns_partitions: str = _f("", "Columns the Partitions view hides (as hidden_columns_nodes).")
    hidden_columns_jobs: str = _f("", "Columns the Jobs view hides (as hidden_columns_nodes).")


@dataclass(frozen=True)
class Rest:
    url: str = _f("", "slurmrestd's URL for the slurmrestd backend: http://host:6820, https://..., or unix:/path/to/socket; empty = $SLURMRESTD_URL.")
    token_file: str = _f("", "File holding the JWT (SLURM_JWT=... as scontrol token prints it, or the bare token); refused when group or others can read it. $SLURM_JWT wins when set.")
    token_command: str = _f("", "Command that prints a JWT (e.g. scontrol token lifespan=3600), split like a shell line but run without one; used when neither $SLURM_JWT nor token_file gives one.")
    user_name: str = _f("", "X-SLURM-USER-NAME to send (behind an authenticating proxy); empty = the user the token was made for.")
    verify_tls: bool = _f(True, "Check slurmrestd's TLS certificate (https URLs).")
    timeout: float = _f(30.0, "Seconds before a slurmrestd request is given up.")


@dataclass(frozen=True)
class Telemetry:
    prometheus_url: str = _f("", "GPU telemetry from this Prometheus (dcgm-exporter's series) instead of nvidia-smi over SSH; empty = nvidia-smi. --prometheus URL sets it too. Only its API is used (/api/v1/query, query_range), with gzip.")
    prometheus_token_file: str = _f("", "File holding a bearer token for Prometheus (first line). Refused when group or others can read it; never put the token itself in the config or argv.")
    prometheus_basic_auth_file: str = _f("", "File holding user:password for Prometheus basic auth (first line), refused when group or others can read it.")
    prometheus_tls_verify: bool = _f(True, "Verify Prometheus' TLS certificate. Setting false is for a test setup only.")
    prometheus_ca_file: str = _f("", "CA bundle for Prometheus' certificate; empty = the system's.")
    prometheus_timeout: float = _f(10.0, "Seconds before one Prometheus query is given up (the view keeps the last values, marked stale).")
    prometheus_concurrency: int = _f(4, "Prometheus queries in flight at once.")
    node_label: str = _f("Hostname", "Series label naming the Slurm node (dcgm-exporter's Hostname); instance with its port stripped is always the fallback.")
    gpu_label: str = _f("gpu", "Series label naming the GPU: gpu (the index Slurm uses), UUID or pci_bus_id (then numbered in PCI bus order per node, as NVML and Slurm's AutoDetect do).")
    job_label: str = _f("hpc_job", "dcgm-exporter's HPC job-mapping label; where present it is cross-checked against Slurm and disagreements are said. Empty = do not read it.")
    scrape_interval: float = _f(30.0, "Prometheus' scrape interval for dcgm-exporter: a GPU whose newest sample is older than two intervals is shown stale.")
    window: int = _f(300, "Seconds over which a change of the last Xid is looked for and PCIe replays and NVLink errors are counted.")


@dataclass(frozen=True)
class Cluster:
    host: str = _f("", "Login node to run Slurm commands on (SSH).")
    backend: str = _f("auto", "Backend for this cluster.")
    jump_host: str = _f("", "Jump host to reach this cluster's compute nodes.")
    rest_url: str = _f("", "slurmrestd URL of this cluster (the slurmrestd backend); replaces [rest] url.")
    token_file: str = _f("", "File holding this cluster's JWT (replaces [rest] token_file; refused when group or others can read it). $SLURM_JWT still wins when set, so leave it unset with several slurmrestd clusters.")
    prometheus_url: str = _f("", "This cluster's Prometheus for GPU telemetry (overrides [telemetry] prometheus_url).")
    refresh_nodes: float = _f(0.0, "Seconds between this cluster's node refreshes; 0 = [refresh] nodes. Each cluster has its own poller (cockpit --cluster all).")
    refresh_jobs: float = _f(0.0, "Seconds between this cluster's job refreshes; 0 = [refresh] jobs.")
    refresh_partitions: float = _f(0.0, "Seconds between this cluster's partition refreshes; 0 = [refresh] partitions.")


SECTIONS = {"general": General, "refresh": Refresh, "ssh": Ssh, "tui": Tui, "rest": Rest, "telemetry": Telemetry}


@dataclass(frozen=True)
class Config:
    general: General = field(default_factory=General)
    refresh: Refresh = field(default_factory=Refresh)
    ssh: Ssh = field(default_factory=Ssh)
    tui: Tui = field(default_factory=Tui)
    rest: Rest = field(default_factory=Rest)
    telemetry: Telemetry = field(default_factory=Telemetry)
    clusters: dict[str, Cluster] = field(default_factory=dict)
    plugins: dict[str, dict[str, Any]] = field(default_factory=dict)
    path: str | None = None  # the file it came from, None for defaults
    cluster: str = ""  # the [clusters.NAME] in use (--cluster NAME), "" for none: audit lines name it


def shown(text: str) -> str:
    """A file name or key as a message shows it: as is when it is plain printable text,
    else quoted with its control characters escaped (a newline or a terminal escape in a
    TOML key or a path must neither break the one-line message nor reach the terminal)."""
    return text if text.isprintable() and text.strip() == text and text else repr(text)


def _value(value: Any) -> str:
    """A bad value for a message: its repr, cut at 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _is_file(p: Path) -> bool:
    try:
        return p.is_file()
    except (OSError, ValueError):  # a name too long for the system, a NUL byte
        return False


def find_config_file(explicit: str | None = None) -> Path | None:
    """The first config file in the search order; an explicit path must exist.
    Raises ConfigError naming the path."""
    if explicit:
        p = Path(explicit).expanduser()
        if not _is_file(p):
            raise ConfigError(f"config file not found: {shown(explicit)}")
        return p
    env = os.environ.get("COCKPIT_CONFIG")
    if env:
        p = Path(env).expanduser()
        if not _is_file(p):
            raise ConfigError(f"config file not found: {shown(env)} (from $COCKPIT_CONFIG)")
        return p
    for p in (config_home() / "config.toml", SYSTEM_CONFIG):
        if p.is_file():
            return p
    return None


def _check_type(where: str, key: str, value: Any, default: Any) -> Any:
    want = type(default)
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, want) or (want is not bool and isinstance(value, bool)):
        raise ConfigError(f"{where}: key {shown(key)} must be {want.__name__}, got {_value(value)}")
    if want is float and not math.isfinite(value):  # TOML has nan and inf
        raise ConfigError(f"{where}: key {shown(key)} must be a finite number, got {_value(value)}")
    if want in (int, float) and value < 0:
        raise ConfigError(f"{where}: key {shown(key)} must not be negative, got {_value(value)}")
    return value


def _section(where: str, name: str, cls: type, raw: Any):
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: [{shown(name)}] must be a table")
    known = {f.name: f for f in fields(cls)}
    vals = {}
    for key, value in raw.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown key {shown(f'{name}.{key}')} (known: {', '.join(sorted(known))})")
        default = known[key].default
        assert default is not MISSING
        vals[key] = _check_type(where, f"{name}.{key}", value, default)
    return cls(**vals)


def parse_config(text: str, where: str = "<config>") -> Config:
    """Validate TOML text into a Config. Raises ConfigError naming file and key."""
    shown_where = shown(where)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{shown_where}: invalid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise ConfigError(f"{shown_where}: invalid TOML: arrays or tables nested too deeply") from None
    kw: dict[str, Any] = {"path": where}
    where = shown_where
    for key, value in raw.items():
        if key in SECTIONS:
            kw[key] = _section(where, key, SECTIONS[key], value)
        elif key == "clusters":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: [clusters] must hold tables like [clusters.NAME]")
            kw["clusters"] = {n: _section(where, f"clusters.{n}", Cluster, v) for n, v in value.items()}
        elif key == "plugins":
            if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
                raise ConfigError(f"{where}: [plugins] must hold tables like [plugins.NAME]")
            kw["plugins"] = value
        else:
            raise ConfigError(f"{where}: unknown section [{shown(key)}] (known: {', '.join([*SECTIONS, 'clusters', 'plugins'])})")
    cfg = Config(**kw)
    for name, cl in [("general.backend", cfg.general.backend)] + [
        (f"clusters.{n}.backend", c.backend) for n, c in cfg.clusters.items()
    ]:
        known = backend_names()
        if cl not in known:
            raise ConfigError(f"{where}: key {shown(name)} must be one of {', '.join(known)}, got {_value(cl)}")
    return cfg


def load_config(explicit: str | None = None) -> Config:
    """Find and load the config; defaults when there is none."""
    path = find_config_file(explicit)
    if path is None:
        return Config()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {shown(str(path))}: {exc}") from None
    return parse_config(text, str(path))


def plugin_config(cfg: Config, plugin) -> dict[str, Any]:
    """The [plugins.NAME] table of ``plugin`` with defaults applied, strictly checked."""
    raw = dict(cfg.plugins.get(plugin.name, {}))
    where = shown(cfg.path or "<config>")
    out = {}
    for key, spec in plugin.config.items():
        out[key] = spec.default
    for key, value in raw.items():
        if key not in plugin.config:
            raise ConfigError(f"{where}: unknown key {shown(f'plugins.{plugin.name}.{key}')} (known: {', '.join(sorted(plugin.config)) or 'none'})")
        spec = plugin.config[key]
        if not isinstance(value, spec.type) or (isinstance(value, bool) and spec.type in (int, float)):
            raise ConfigError(f"{where}: key {shown(f'plugins.{plugin.name}.{key}')} has the wrong type: {_value(value)}")
        out[key] = value
    return out


def with_prometheus(cfg: Config, url: str | None) -> Config:
    """``--prometheus URL`` (or a cluster's prometheus_url) over [telemetry] prometheus_url."""
    return replace(cfg, telemetry=replace(cfg.telemetry, prometheus_url=url)) if url else cfg


def with_overrides(cfg: Config, **general: Any) -> Config:
    """Apply command-line overrides (None values are ignored) to [general]."""
    changes = {k: v for k, v in general.items() if v is not None}
    return replace(cfg, general=replace(cfg.general, **changes)) if changes else cfg
