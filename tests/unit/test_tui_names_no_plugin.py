"""tui/ names no bundled plugin: what a plugin's keys, palette entries, ``:`` commands and
forms open comes from its declared OpenerSpecs (cockpit/plugins/specs.py), so the TUI's
code holds none of the bundled plugins' package names, entry-point names or the names
they declare (screens, checks, openers). A third-party plugin is opened the same way
(tests/tui/test_plugin_openers.py)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from cockpit.plugins import loader

ROOT = Path(__file__).resolve().parents[2]
TUI = ROOT / "cockpit" / "tui"


def bundled() -> dict[str, str]:
    """Entry-point name -> package, from pyproject.toml's cockpit.plugins entry points."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    points = project["entry-points"]["cockpit.plugins"]
    return {name: target.split(":")[0].split(".")[0] for name, target in points.items()}


def declared_names() -> set[str]:
    """What the bundled plugins declare: screens, checks, openers (some are English words:
    "why", "storage", so a string is checked for being one, not for holding one)."""
    names = set(bundled())
    for plugin in loader.load_plugins().plugins.values():
        names |= set(plugin.screens) | {c.name for c in plugin.checks} | {o.name for o in plugin.openers}
    return names


def strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string constant of the module but docstrings (prose may say "a runbook")."""
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_the_bundled_plugins_are_known():
    assert bundled() == {"nccl": "cockpit_nccl", "layout": "cockpit_layout", "runbooks": "cockpit_runbooks",
                         "preflight": "cockpit_preflight"}
    assert {"layout-job", "layout-plan", "why", "validate", "nccl", "hung-job"} - declared_names() == {"hung-job"}


def test_no_tui_module_names_a_bundled_plugin():
    packages, words, names = set(bundled().values()), set(bundled()), declared_names()
    found = []
    for path in sorted(TUI.rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(ROOT)
        found += [f"{rel}: package {p}" for p in packages if p in text]
        for line, value in strings(ast.parse(text)):
            hits = {w for w in re.findall(r"[\w-]+", value) if w in words} | ({value} & names)
            found += [f"{rel}:{line}: {value!r} names {sorted(hits)}"] if hits else []
    assert found == []


def test_the_check_finds_a_plugin_named_in_a_tui_string(tmp_path):
    """The scan itself: a string naming a plugin is found, a docstring saying it is not."""
    tree = ast.parse('"""Opens the runbooks plugin."""\nx = app.plugins.get("runbooks")\n')
    assert [v for _line, v in strings(tree)] == ["runbooks"]
    assert "why" in declared_names() and "runbooks" in bundled()
