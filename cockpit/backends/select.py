"""Pick the backend: demo, replay, pyslurm (only where it matches), else the CLI."""

from __future__ import annotations

from cockpit.config import Config
from cockpit.errors import ConfigError


async def choose_backend(cfg: Config, runner, replay_dir: str | None = None):
    """Return (backend, reason). Raises ConfigError for an impossible choice."""
    kind = cfg.general.backend
    if replay_dir:
        from cockpit.backends.replay import ReplayBackend

        return ReplayBackend(replay_dir), f"--replay {replay_dir}: recorded outputs, not a live cluster"
    if kind == "demo":
        from cockpit.backends.demo import DemoBackend

        return DemoBackend(), "--demo: embedded simulated cluster"
    from cockpit.backends.slurm_cli import SlurmCliBackend

    cli = SlurmCliBackend(runner, bin_dir=cfg.general.slurm_bin_dir, timeout=cfg.general.command_timeout)
    if kind == "slurm-cli":
        return cli, "slurm-cli: asked for in config or flags"
    from cockpit.backends import pyslurm_backend

    found = await pyslurm_backend.probe(cli, remote=bool(cfg.general.host))
    if kind == "pyslurm":
        if not found.usable:
            raise ConfigError(f"backend 'pyslurm' asked for but unusable: {found.why}")
        return pyslurm_backend.PyslurmBackend(cli=cli, probed=found), f"pyslurm: asked for; {found.why}"
    if found.usable:
        return pyslurm_backend.PyslurmBackend(cli=cli, probed=found), f"auto: {found.why}"
    return cli, f"auto: slurm-cli, because {found.why}"
