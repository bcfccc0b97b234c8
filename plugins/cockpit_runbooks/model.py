"""Runbooks are data: one TOML file each. This module loads and validates them.

Bundled runbooks live in ``cockpit_runbooks/runbooks/``; a site adds its own
in ``$XDG_CONFIG_HOME/cockpit/runbooks/*.toml`` (a site file with a bundled
name replaces the bundled one). A file with a TOML syntax error, an unknown
probe or a bad key is reported with its path and line; the others still load.
Format: docs/runbooks.md.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BUNDLED_DIR = Path(__file__).with_name("runbooks")
TARGETS = ("job", "node")
VIA = ("auto", "local", "ssh", "srun")
_STEP_KEYS = {"id", "title", "probe", "args", "via", "when", "next", "action", "params", "severity", "explain"}
_TOP_KEYS = {"name", "title", "description", "target", "steps"}
_SEVERITIES = {"OK", "WARN", "CRIT", "UNKNOWN"}
_COND = re.compile(r"^(!?)(finding|fact):([\w.\-]+)$")


@dataclass(frozen=True)
class StepSpec:
    id: str
    title: str
    line: int  # line of the step's [[steps]] header, for messages
    probe: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    via: str = "auto"
    when: tuple[str, ...] = ()  # all must hold: "finding:CODE", "!finding:CODE", "fact:NAME"
    next: str | None = None  # step id to jump to after this step ran, or "end"
    action: str | None = None  # an actions-layer name, or "requeue-exclude"
    params: Mapping[str, Any] = field(default_factory=dict)  # action params (templated)
    severity: Mapping[str, str] = field(default_factory=dict)  # finding code -> severity override
    explain: str = ""


@dataclass(frozen=True)
class Runbook:
    name: str
    title: str
    description: str
    target: str  # "job" or "node"
    steps: tuple[StepSpec, ...]
    path: str
    source: str  # "bundled" or "site"


@dataclass(frozen=True, slots=True)
class LoadProblem:
    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}" if self.line else f"{self.path}: {self.message}"


class RunbookError(ValueError):
    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def _step_lines(text: str) -> list[int]:
    return [n for n, line in enumerate(text.splitlines(), 1) if re.match(r"^\s*\[\[\s*steps\s*\]\]", line)]


def _key_line(text: str, start: int, key: str) -> int:
    """Line of ``key =`` at or after line ``start`` (before the next [[steps]]); else start."""
    lines = text.splitlines()
    for n in range(start, len(lines)):
        if n > start and re.match(r"^\s*\[\[", lines[n]):
            break
        if re.match(rf"^\s*{re.escape(key)}\s*=", lines[n]):
            return n + 1
    return start


def _shown(v: Any) -> str:
    """A bad value for a message: its repr (control characters escaped), cut at 80."""
    text = repr(v)
    return text if len(text) <= 80 else text[:79] + "…"


def _str(d: Mapping[str, Any], key: str, default: str = "") -> str:
    v = d.get(key, default)
    if not isinstance(v, str):
        raise RunbookError(f"{key} must be a string, got {_shown(v)}")
    return v


def _step(raw: Any, n: int, line: int, text: str, probes: Iterable[str], actions: Iterable[str]) -> StepSpec:
    if not isinstance(raw, dict):
        raise RunbookError(f"step {n} is not a table", line)
    unknown = set(raw) - _STEP_KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise RunbookError(f"step {n}: unknown key {_shown(key)}", _key_line(text, line - 1, key))
    sid = _str(raw, "id", f"step{n}")
    for key in ("probe", "action", "next"):  # names: a list or a table here is no name
        if key in raw and not isinstance(raw[key], str):
            raise RunbookError(f"step {_shown(sid)}: {key} must be a string, got {_shown(raw[key])}",
                               _key_line(text, line - 1, key))
    probe = raw.get("probe")
    if probe is not None and probe not in set(probes):
        raise RunbookError(f"step {_shown(sid)}: unknown probe {_shown(probe)}", _key_line(text, line - 1, "probe"))
    action = raw.get("action")
    if action is not None and action not in set(actions):
        raise RunbookError(f"step {_shown(sid)}: unknown action {_shown(action)}", _key_line(text, line - 1, "action"))
    if probe is None and action is None:
        raise RunbookError(f"step {_shown(sid)} has neither a probe nor an action", line)
    via = _str(raw, "via", "auto")
    if via not in VIA:
        raise RunbookError(f"step {_shown(sid)}: via must be one of {', '.join(VIA)}", _key_line(text, line - 1, "via"))
    when = raw.get("when", ())
    if not isinstance(when, (str, list, tuple)):
        raise RunbookError(f"step {_shown(sid)}: when must be a condition or a list of them, got {_shown(when)}",
                           _key_line(text, line - 1, "when"))
    when = (when,) if isinstance(when, str) else tuple(when)
    for cond in when:
        if not isinstance(cond, str) or not _COND.match(cond.strip()):
            raise RunbookError(f"step {_shown(sid)}: bad condition {_shown(cond)} (finding:CODE, !finding:CODE, fact:NAME)",
                               _key_line(text, line - 1, "when"))
    sev = raw.get("severity", {})
    if not isinstance(sev, dict) or any(str(v).upper() not in _SEVERITIES for v in sev.values()):
        raise RunbookError(f"step {_shown(sid)}: severity must map finding codes to OK/WARN/CRIT/UNKNOWN",
                           _key_line(text, line - 1, "severity"))
    for key in ("args", "params"):
        if not isinstance(raw.get(key, {}), dict):
            raise RunbookError(f"step {_shown(sid)}: {key} must be a table", _key_line(text, line - 1, key))
    return StepSpec(sid, _str(raw, "title", sid), line, probe, dict(raw.get("args", {})), via,
                    tuple(c.strip() for c in when), raw.get("next"), action, dict(raw.get("params", {})),
                    {k: str(v).upper() for k, v in sev.items()}, _str(raw, "explain"))


def parse_runbook(text: str, path: str, probes: Iterable[str], actions: Iterable[str], source: str = "site") -> Runbook:
    """Parse one runbook. Raises RunbookError with the line where it can name one."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise RunbookError(f"TOML syntax error: {exc}", int(m.group(1)) if m else None) from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise RunbookError("TOML syntax error: arrays or tables nested too deeply") from None
    unknown = set(raw) - _TOP_KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise RunbookError(f"unknown key {_shown(key)}", _key_line(text, 0, key))
    name = _str(raw, "name", Path(path).stem)
    target = _str(raw, "target", "job")
    if target not in TARGETS:
        raise RunbookError(f"target must be job or node, got {_shown(target)}", _key_line(text, 0, "target"))
    steps_raw = raw.get("steps", [])
    if not isinstance(steps_raw, list) or not steps_raw:
        raise RunbookError("a runbook needs at least one [[steps]] table")
    lines = _step_lines(text) + [0] * len(steps_raw)
    probes, actions = list(probes), list(actions)
    steps = tuple(_step(s, n, lines[n - 1], text, probes, actions) for n, s in enumerate(steps_raw, 1))
    ids = [s.id for s in steps]
    dup = next((i for i in ids if ids.count(i) > 1), None)
    if dup:
        raise RunbookError(f"duplicate step id {_shown(dup)}")
    for s in steps:
        if s.next is not None and s.next != "end" and s.next not in ids:
            raise RunbookError(f"step {_shown(s.id)}: next names no step: {_shown(s.next)}", _key_line(text, s.line - 1, "next"))
    return Runbook(name, _str(raw, "title", name), _str(raw, "description"), target, steps, path, source)


def load_all(dirs: Iterable[tuple[Path, str]], probes: Iterable[str], actions: Iterable[str]) -> tuple[dict[str, Runbook], list[LoadProblem]]:
    """Load every ``*.toml`` of each (directory, source); later directories win.

    Never raises for a bad file: it becomes a LoadProblem and the rest load."""
    books: dict[str, Runbook] = {}
    problems: list[LoadProblem] = []
    probes, actions = list(probes), list(actions)
    for directory, source in dirs:
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.toml")):
            try:
                text = path.read_text(encoding="utf-8")
                book = parse_runbook(text, str(path), probes, actions, source)
            except RunbookError as exc:
                problems.append(LoadProblem(str(path), exc.line, str(exc)))
                continue
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(LoadProblem(str(path), None, f"cannot read: {exc}"))
                continue
            books[book.name] = book
    return books, problems
