"""The architecture's layers hold: the import-linter contracts of pyproject.toml pass,
they name every part of the package, and only the TUI and plugins' screen modules
import Textual (checked on the import graph, so a new module is covered too)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ("cockpit_nccl", "cockpit_layout", "cockpit_runbooks", "cockpit_preflight")

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("cockpit", *PLUGINS, include_external_packages=True)


def test_lint_imports_passes():
    exe = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(exe)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "BROKEN" not in out.stdout and out.stdout.count("KEPT") == len(_contracts())


def test_the_layers_name_every_part_of_the_package():
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    named = {part.strip() for layer in layers["layers"] for part in layer.replace(":", "|").split("|")}
    parts = {f"cockpit.{p.stem if p.is_file() else p.name}" for p in (ROOT / "cockpit").iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    # The config.example.toml and man page generators are tools, not layers; the rest must be placed.
    assert parts - named == {"cockpit.config_example", "cockpit.manpage"}, sorted(parts - named)


def test_only_the_tui_and_screen_modules_import_textual(graph):
    importers = {m for m in graph.find_modules_that_directly_import("textual")}
    importers |= {m for m in graph.find_modules_that_directly_import("textual_plotext")}
    allowed = {m for m in importers if m.startswith("cockpit.tui.") or m.split(".")[-1] == "screen"}
    assert importers - allowed == set()
    assert any(m.startswith("cockpit.tui.") for m in importers)  # the check sees the TUI at all


def test_plugins_import_only_the_facade(graph):
    for plugin in PLUGINS:
        for module in graph.find_children(plugin) | {plugin}:
            used = {m for m in graph.find_modules_directly_imported_by(module) if m.startswith("cockpit.")}
            assert used <= {"cockpit.plugins.api"}, (module, sorted(used))
