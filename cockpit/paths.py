"""XDG locations, in one place."""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(var: str, fallback: str) -> Path:
    val = os.environ.get(var)
    return Path(val) if val and os.path.isabs(val) else Path.home() / fallback


def config_home() -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config") / "cockpit"


def state_home() -> Path:
    return _xdg("XDG_STATE_HOME", ".local/state") / "cockpit"


def data_home() -> Path:
    return _xdg("XDG_DATA_HOME", ".local/share") / "cockpit"


def default_audit_log() -> Path:
    return state_home() / "audit.jsonl"


def default_demo_audit_log() -> Path:
    """The demo's own audit file: the demo acts on a simulated cluster and never
    writes the site's audit log (``--demo`` is sealed)."""
    return state_home() / "demo-audit.jsonl"
