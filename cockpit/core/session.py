"""Build what every command and the TUI need from the config and the flags:
the Runner for Slurm commands (local or SSH), the Backend, read-only state."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace
from typing import Any

from cockpit.config import Config, load_config, with_overrides, with_prometheus
from cockpit.errors import ConfigError


@dataclass
class Session:
    config: Config
    backend: Any
    runner: Any
    read_only: bool
    backend_reason: str = ""  # why this backend was chosen (doctor prints it)
    notes: list[str] = field(default_factory=list)

    async def close(self) -> None:
        await self.backend.close()
        close = getattr(self.runner, "close", None)
        if close is not None:
            await close()


def cluster_names(cfg: Config) -> list[str]:
    """The configured clusters, for ``--cluster all``. Raises ConfigError when there are none."""
    if not cfg.clusters:
        raise ConfigError("--cluster all: the config has no [clusters.NAME] tables")
    return sorted(cfg.clusters)


def _cluster_overrides(cfg: Config, name: str | None) -> Config:
    if not name:
        return cfg
    if name not in cfg.clusters:
        known = ", ".join(sorted(cfg.clusters)) or "none configured"
        raise ConfigError(f"unknown cluster {name!r} (known: {known})")
    c = cfg.clusters[name]
    cfg = replace(cfg, cluster=name)
    if c.rest_url:
        cfg = replace(cfg, rest=replace(cfg.rest, url=c.rest_url))
    if c.token_file:
        cfg = replace(cfg, rest=replace(cfg.rest, token_file=c.token_file))
    cfg = with_prometheus(cfg, c.prometheus_url or None)
    own = {k: getattr(c, f"refresh_{k}") for k in ("nodes", "jobs", "partitions") if getattr(c, f"refresh_{k}") > 0}
    if own:  # this cluster's own poller intervals (the TUI runs one poller per cluster)
        cfg = replace(cfg, refresh=replace(cfg.refresh, **own))
    return with_overrides(cfg, host=c.host or None, backend=c.backend if c.backend != "auto" else None)


def make_runner(cfg: Config):
    """Local subprocess runner, or an SSH runner when a host is configured."""
    if cfg.general.host:
        from cockpit.remote.runner import make_ssh_runner

        return make_ssh_runner(cfg, cfg.general.host)
    from cockpit.runner import LocalRunner

    return LocalRunner(default_timeout=cfg.general.command_timeout)


async def open_session(args: argparse.Namespace) -> Session:
    """Config + flags -> Session. Raises ConfigError/BackendError with one-line messages."""
    cfg = session_config(args)
    replay = getattr(args, "replay", None)
    from cockpit.backends.select import choose_backend

    runner = None if (cfg.general.backend in ("demo", "slurmrestd") or replay) else make_runner(cfg)
    backend, reason = await choose_backend(cfg, runner, replay_dir=replay)
    return Session(cfg, backend, runner, cfg.general.read_only, reason)


def session_config(args: argparse.Namespace) -> Config:
    """The config with the command line's overrides (--config, --cluster, --demo,
    --backend, --host, --read-only), before any backend is chosen. Raises ConfigError."""
    cfg = load_config(getattr(args, "config", None))
    cfg = _cluster_overrides(cfg, getattr(args, "cluster", None))
    backend_flag = "demo" if getattr(args, "demo", False) else getattr(args, "backend", None)
    cfg = with_overrides(
        cfg,
        host=getattr(args, "host", None),
        backend=backend_flag,
        read_only=True if getattr(args, "read_only", False) else None,
    )
    cfg = with_prometheus(cfg, getattr(args, "prometheus", None))
    return cfg
