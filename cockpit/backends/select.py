"""Pick the backend: demo, replay, pyslurm (only where it matches), else the CLI,
or any other backend installed as a ``cockpit.backends`` entry point, by name."""

from __future__ import annotations

from cockpit.config import Config
from cockpit.entrypoints import BUNDLED, backend_entry_points
from cockpit.errors import CockpitError, ConfigError


async def choose_backend(cfg: Config, runner, replay_dir: str | None = None):
    """Return (backend, reason). Raises ConfigError for an impossible choice."""
    kind = cfg.general.backend
    if replay_dir:
        from cockpit.backends.replay import ReplayBackend

        return ReplayBackend(replay_dir), f"--replay {replay_dir}: recorded outputs, not a live cluster"
    if kind == "demo":
        from cockpit.backends.demo import DemoBackend

        return DemoBackend(), "--demo: embedded simulated cluster"
    if kind not in BUNDLED and kind != "auto":
        return await _installed(kind, cfg, runner)
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


async def _installed(name: str, cfg: Config, runner):
    """A third-party backend: its entry point names a class (or factory) with an async
    ``from_config(config, runner)`` that returns the backend. Raises ConfigError."""
    ep = backend_entry_points().get(name)
    if ep is None:
        raise ConfigError(f"backend {name!r} is not installed (no 'cockpit.backends' entry point of that name)")
    try:
        made = await ep.load().from_config(cfg, runner)
    except CockpitError:  # its own one-line errors keep their exit codes (3: not reachable)
        raise
    except Exception as exc:  # noqa: BLE001 - a broken third-party backend is one line, not a traceback
        raise ConfigError(f"backend {name!r} ({ep.value}) could not start: {type(exc).__name__}: {exc}") from None
    return made, f"{name}: asked for in config or flags ({ep.value})"
