"""The declared seams: each backend declares one frozen Capabilities whose parts
satisfy their Protocols; backends are found through the ``cockpit.backends``
entry points; the import contracts fail on a deliberate violation."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import subprocess
import sys
import types
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from cockpit import entrypoints
from cockpit.backends import base
from cockpit.backends.base import Capabilities
from cockpit.backends.demo import DemoBackend
from cockpit.backends.pyslurm_backend import PyslurmBackend
from cockpit.backends.replay import ReplayBackend
from cockpit.backends.slurm_cli import SlurmCliBackend
from cockpit.config import Config, General, parse_config
from cockpit.errors import ConfigError
from cockpit.runner import LocalRunner

ROOT = Path(__file__).resolve().parents[2]
PROTOCOLS = {"streaming": base.SnapshotStreaming, "accounting": base.AccountingOffer,
             "scheduling": base.SchedulingOffer, "inspection": base.JobInspection,
             "output_paths": base.JobOutputPaths, "lookup": base.JobLookup,
             "executor": base.ExecutorOffer, "probes": base.ProbeRunnerOffer}


def _replay(tmp_path: Path) -> ReplayBackend:
    (tmp_path / "sinfo.json").write_text('{"nodes": []}')
    return ReplayBackend(str(tmp_path))


def _backends(tmp_path):
    cli = SlurmCliBackend(LocalRunner())
    return {"slurm-cli": cli, "pyslurm": PyslurmBackend(cli=cli, worker=object()),
            "demo": DemoBackend(), "replay": _replay(tmp_path)}


def test_every_backend_declares_frozen_capabilities_that_meet_their_protocols(tmp_path):
    for name, backend in _backends(tmp_path).items():
        caps = backend.capabilities()
        assert isinstance(caps, Capabilities) and caps is backend.capabilities(), name
        assert isinstance(backend, base.Backend), name
        with pytest.raises(dataclasses.FrozenInstanceError):
            caps.simulated = True  # type: ignore[misc]
        for field, proto in PROTOCOLS.items():
            part = getattr(caps, field)
            assert part is None or isinstance(part, proto), (name, field)


def test_what_each_backend_can_do(tmp_path):
    b = _backends(tmp_path)
    demo, cli, py, replay = (b[k].capabilities() for k in ("demo", "slurm-cli", "pyslurm", "replay"))
    assert demo.simulated and not cli.simulated and not py.simulated
    assert demo.streaming is None and cli.streaming is not None and py.streaming is b["pyslurm"]
    # pyslurm has no sacct or scontrol-show-job call: those are its CLI twin's capabilities
    assert py.accounting is cli.accounting and py.output_paths is cli.output_paths
    assert py.inspection is b["pyslurm"]
    assert demo.lookup is not None and cli.lookup is None
    # a replay has no controller to ask: accounting says so in one line, it cannot act
    assert asyncio.run(replay.accounting.accounting()) is None
    assert "reads recorded outputs" in replay.accounting.accounting_why
    assert replay.executor.action_executor(Config()) is None and "cannot act" in replay.cannot_act


def test_the_accounting_offer_is_cached_on_itself_not_written_onto_the_backend():
    cli = SlurmCliBackend(LocalRunner())
    before = set(vars(cli))
    offers = cli.capabilities().accounting
    assert offers is cli.capabilities().scheduling
    assert set(vars(cli)) - before <= {"_offers", "_caps"}
    assert not hasattr(cli, "accounting_why") and not hasattr(cli, "_slurm_config")


class _ThirdParty:
    """A backend from another package: found by its entry point, built by from_config."""

    name = "site-rest"
    description = "site-rest (test)"
    made_with: tuple = ()

    @classmethod
    async def from_config(cls, config, runner):
        made = cls()
        made.made_with = (config.general.backend, runner)
        return made


def _installed(monkeypatch, **extra: str) -> None:
    real = entrypoints.backend_entry_points()
    eps = {**real, **{n: EntryPoint(n, v, entrypoints.GROUP) for n, v in extra.items()}}
    monkeypatch.setattr(entrypoints, "backend_entry_points", lambda: eps)
    monkeypatch.setattr("cockpit.backends.select.backend_entry_points", lambda: eps)


def test_bundled_backends_are_entry_points_and_names():
    eps = entrypoints.backend_entry_points()
    assert {"slurm-cli", "pyslurm", "demo", "replay"} <= set(eps)
    names = entrypoints.backend_names()
    assert names[0] == "auto" and "replay" not in names and {"slurm-cli", "pyslurm", "demo"} <= set(names)


def test_a_third_party_backend_installs_like_a_plugin(monkeypatch):
    mod = types.ModuleType("cockpit_test_site_backend")
    mod.Backend = _ThirdParty
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    _installed(monkeypatch, **{"site-rest": f"{mod.__name__}:Backend"})
    assert "site-rest" in entrypoints.backend_names()
    cfg = parse_config('[general]\nbackend = "site-rest"\n', "test.toml")
    from cockpit.backends.select import choose_backend

    backend, why = asyncio.run(choose_backend(cfg, runner="RUNNER"))
    assert isinstance(backend, _ThirdParty) and backend.made_with == ("site-rest", "RUNNER")
    assert why.startswith("site-rest: ")


def test_an_unknown_backend_name_is_one_line_naming_the_installed_ones():
    with pytest.raises(ConfigError) as err:
        parse_config('[general]\nbackend = "nosuch"\n', "test.toml")
    msg = str(err.value)
    assert "nosuch" in msg and "slurm-cli" in msg and "\n" not in msg


def test_a_broken_third_party_backend_is_one_line(monkeypatch):
    _installed(monkeypatch, broken="cockpit_no_such_module_here:Backend")
    from cockpit.backends.select import choose_backend

    cfg = Config(general=General(backend="broken"))
    with pytest.raises(ConfigError) as err:
        asyncio.run(choose_backend(cfg, runner=None))
    assert "broken" in str(err.value) and "ModuleNotFoundError" in str(err.value)


def _lint(tree: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("lint-imports")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{tree}:{tree / 'plugins'}"}
    return subprocess.run([str(exe)], cwd=tree, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow
def test_a_deliberate_violation_breaks_the_new_contracts(tmp_path):
    tree = tmp_path / "tree"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "__snapshots__")
    shutil.copytree(ROOT / "cockpit", tree / "cockpit", ignore=ignore)
    shutil.copytree(ROOT / "plugins", tree / "plugins", ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    clean = _lint(tree)
    assert clean.returncode == 0 and "5 kept, 0 broken" in clean.stdout, clean.stdout[-2000:]
    help_screen = tree / "cockpit" / "tui" / "screens" / "help.py"
    help_screen.write_text(help_screen.read_text() + "\nfrom cockpit.backends import demo as _demo  # violation\n")
    nccl = tree / "plugins" / "cockpit_nccl" / "judge.py"
    nccl.write_text(nccl.read_text() + "\nimport cockpit_layout.rules  # violation\n")
    broken = _lint(tree)
    assert broken.returncode != 0
    out = " ".join(broken.stdout.split())
    assert "they import no backend, remote or runner BROKEN" in out
    assert "Plugins do not import each other BROKEN" in out
    assert "cockpit.tui.screens.help -> cockpit.backends.demo" in out
