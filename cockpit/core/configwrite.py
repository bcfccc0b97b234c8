"""Set one key of the config file from the TUI (the column chooser), keeping the rest
of the file as the operator wrote it: comments, order and other keys untouched.

The file written is the one cockpit read (``Config.path``), else the user's
($XDG_CONFIG_HOME/cockpit/config.toml): a new user file would shadow a system
one, so a system config that is not writable is an error, never a silent copy.
The new text is validated as a whole before it replaces the file (atomically,
through a temporary file beside it), so a failed write leaves the old file.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from cockpit.config import Config, parse_config
from cockpit.errors import ConfigError
from cockpit.paths import config_home


def target_path(cfg: Config) -> Path:
    """The file a setting is saved to: the config cockpit read, else the user's."""
    return Path(cfg.path) if cfg.path and not cfg.path.startswith("<") else config_home() / "config.toml"


def with_key(text: str, section: str, key: str, value: str) -> str:
    """``text`` with ``key = "value"`` in ``[section]`` (replaced, or added under the
    section's header, or a new section at the end)."""
    line = f"{key} = {json.dumps(value, ensure_ascii=True)}"  # a JSON string is a TOML basic string
    lines = text.splitlines()
    header = re.compile(rf"^\s*\[\s*{re.escape(section)}\s*\]\s*(#.*)?$")
    any_header = re.compile(r"^\s*\[")
    start = next((i for i, ln in enumerate(lines) if header.match(ln)), None)
    if start is None:
        return text + ("\n" if text and not text.endswith("\n") else "") + f"\n[{section}]\n{line}\n"
    end = next((i for i in range(start + 1, len(lines)) if any_header.match(lines[i])), len(lines))
    mine = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for i in range(start + 1, end):
        if mine.match(lines[i]):
            lines[i] = line
            break
    else:
        lines.insert(start + 1, line)
    return "\n".join(lines) + "\n"


def save_tui_key(cfg: Config, key: str, value: str) -> Path:
    """Write ``[tui] key = value`` to the config file; returns its path.

    Raises ConfigError (one line, naming the file) when it cannot be read, the result
    would not be a valid config, or it cannot be written."""
    path = target_path(cfg)
    try:
        old = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    text = with_key(old, "tui", key, value)
    parse_config(text, str(path))  # raises ConfigError: the file is left as it was
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".config.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            if path.exists():
                os.chmod(tmp, path.stat().st_mode & 0o7777)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
