"""The backends installed as ``cockpit.backends`` entry points, listed without importing them.

cockpit's own backends are declared in pyproject.toml like any third-party one,
so a site's backend (``pip install cockpit-backend-foo``) is a name for
``--backend`` and ``[general] backend`` the moment it is installed.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

GROUP = "cockpit.backends"
# Reached through its own flag (--replay DIR), never chosen by name.
NOT_BY_NAME = frozenset({"replay"})
# cockpit's own, for a checkout that was never installed (no metadata to read).
BUNDLED = ("slurm-cli", "pyslurm", "demo")


def backend_entry_points() -> dict[str, EntryPoint]:
    """name -> entry point, for every installed backend."""
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def backend_names() -> tuple[str, ...]:
    """The values ``--backend`` takes: "auto" first, then every installed backend by name."""
    found = [n for n in backend_entry_points() if n not in NOT_BY_NAME]
    names = list(BUNDLED) + sorted(n for n in found if n not in BUNDLED)
    return ("auto", *names)
