"""Fuzz every CLI argument parser: ``cockpit.cli.main`` with random argv, in-process.

Whatever the argv, main returns (or argparse exits) with a known exit code (0 ok,
1 failed, 2 usage, 3 unavailable), never raises, never prints a traceback or an
"internal error", and a usage or unavailable error is one line on stderr.

Nothing real is reached: the config selects the demo backend (sealed: simulated
executor and probes), PATH is an empty directory (a --backend slurm-cli finds no
squeue), SLURM_CONF names no file, the TUI's entry point
is a stub, every SSH host maps to 127.255.255.254 port 9 (loopback, nothing listens),
and values never hold "/" or "~", so every path argv names is under the test's own
working directory. pyslurm's probe answers "not installed", as where it is.
"""

from __future__ import annotations

import argparse
import re
import sys

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cockpit import cli

FUZZ = settings(max_examples=400, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
KNOWN_EXIT = {0, 1, 2, 3}


def _commands() -> list[tuple[list[str], list[argparse.Action]]]:
    """Every subcommand path with its own arguments (from the real parser)."""
    out = []

    def walk(parser, path):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out.append((path, [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]))
        for a in subs:
            for name, sp in a.choices.items():
                walk(sp, [*path, name])

    walk(cli.build_parser(), [])
    return out


COMMANDS = _commands()
SAFE = st.characters(blacklist_characters="/~\x00", blacklist_categories=("Cs",))
# A hostlist of over 100k names is refused before it is expanded (see
# test_a_huge_hostlist_is_refused), but one just under that is expanded and fanned out
# over the demo: right, and slow, so ranges of thousands stay out of the random values.
BOMB = re.compile(r"\[[^\]]*\d{4,}")
values = st.text(SAFE, max_size=12).filter(lambda v: not BOMB.search(v)) | st.sampled_from([
    "", "-", "--", "nan", "inf", "-inf", "-1", "0", "1e309", "99999999999999999999", "1_2", "5+1",
    "node[01-04]", "node[1-3,x]", "node[", "@group", "\x1b[2J", "\x1b]8;;http://x\x07link\x1b]8;;\x07",
    "\x1b]52;c;aGk=\x07", "a\nb", "\u200b", "e\u0301", "x" * 5000, "USR1", "KILL", "SIG", "1:00", "-5",
    "demo", "slurm-cli", "json", "table", "ecc", "node01", "head", "x" * 255])
# Never the follow mode of job tail (it runs until interrupted, by design).
FOREVER = {"-f", "--follow"}


@st.composite
def argvs(draw) -> list[str]:
    path, actions = draw(st.sampled_from(COMMANDS))
    argv = list(path)
    options = [a for a in actions if a.option_strings and not FOREVER & set(a.option_strings)]
    positionals = [a for a in actions if not a.option_strings]
    for _ in range(draw(st.integers(0, 4))):
        choice = draw(st.integers(0, 9))
        if choice < 6 and options:
            action = draw(st.sampled_from(options))
            argv.append(draw(st.sampled_from(action.option_strings)))
            if action.nargs != 0:
                if action.choices and draw(st.booleans()):
                    argv.append(str(draw(st.sampled_from(list(action.choices)))))
                else:
                    argv.append(draw(values))
        elif choice < 8 and positionals:
            argv.append(draw(values))
        else:
            argv.append(draw(values | st.sampled_from(["--", "--json", "--bogus", "-x", "--demo", "--yes"])))
    if draw(st.booleans()):
        argv = draw(st.permutations(argv))
    return argv


@pytest.fixture
def sealed(tmp_path, monkeypatch):
    (tmp_path / "empty-bin").mkdir()
    ssh = tmp_path / "ssh_config"
    ssh.write_text("Host *\n  HostName 127.255.255.254\n  Port 9\n  BatchMode yes\n")
    (tmp_path / "known_hosts").write_text("")
    cfg = tmp_path / "cockpit.toml"
    cfg.write_text(f'[general]\nbackend = "demo"\naudit_log = "{tmp_path / "audit.jsonl"}"\ncommand_timeout = 2.0\n'
                   f'[ssh]\nconfig_file = "{ssh}"\nknown_hosts = "{tmp_path / "known_hosts"}"\n'
                   "connect_timeout = 1.0\ncommand_timeout = 2.0\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("COCKPIT_CONFIG", str(cfg))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "no-slurm.conf"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COCKPIT_DEBUG", raising=False)
    from cockpit.backends import pyslurm_backend

    async def no_pyslurm(*args, **kwargs):  # as on a machine without pyslurm: no worker, no libslurm
        return pyslurm_backend.Probe(False, "pyslurm is not installed")

    monkeypatch.setattr(pyslurm_backend, "probe", no_pyslurm)
    import cockpit.tui.launch

    monkeypatch.setattr(cockpit.tui.launch, "run_tui", lambda args: 0)
    return tmp_path


def _run(argv, capsys) -> tuple[int, str, str]:
    """(exit code, stdout, stderr); stderr is prefixed with "argparse:" when argparse exited."""
    parsed = ""
    try:
        rc = cli.main(list(argv))
    except SystemExit as exc:  # argparse: --help, --version, usage errors
        rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        parsed = "argparse:"
    out, err = capsys.readouterr()
    return rc, out, parsed + err


def _is_check(argv) -> bool:
    """Checks and runbooks exit with the monitoring-plugin codes (2 = CRIT, 3 = UNKNOWN)
    after their report and progress lines, and doctor exits 3 after its report when the
    controller does not answer: for them 2 and 3 are results, not errors."""
    words = [a for a in argv if not a.startswith("-")]
    return bool(words) and words[0] in ("check", "runbook", "doctor")


def _check(argv, rc, err) -> None:
    assert rc in KNOWN_EXIT, (argv, rc, err)
    assert "Traceback" not in err and "internal error" not in err, (argv, err)
    usage = err.startswith("argparse:")
    err = err.removeprefix("argparse:")
    if (usage and rc == 2) or (rc in (2, 3) and not _is_check(argv)):
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("cockpit"), (argv, err)
    assert "\x1b" not in err, (argv, err)  # argv's escape sequences never reach the terminal raw


@FUZZ
@given(argv=argvs())
def test_random_argv(argv, sealed, capsys):
    rc, _out, err = _run(argv, capsys)
    event(f"exit {rc}")  # pytest --hypothesis-show-statistics: how far the argv got
    _check(argv, rc, err)


@pytest.mark.parametrize("argv", [
    ["snapshot", "--bogus", "\x1b[2J"],
    ["snapshot", "a\nb"],
    ["exec", "--srun", "node01", "--", "true"],
    ["exec", "--timeout", "nan", "node01", "--", "true"],
    ["exec", "--timeout", "-1", "node01", "--", "true"],
    ["job", "cancel", "99999999999999999999999", "--yes"],
    ["node", "drain", "node[", "--reason", "x", "--yes"],
    ["--host", "head", "snapshot"],
    ["--backend", "slurm-cli", "snapshot"],
    ["--backend", "pyslurm", "snapshot"],
    ["--replay", "nowhere", "snapshot"],
    ["--config", "x" * 5000, "snapshot"],
    ["record", "here"],
    ["check", "nccl", "--num-nodes", "-5", "--yes"],
    ["check", "layout", "--job", "\x1b"],  # a check's own error echoes argv: escaped too
    ["runbook", "hung-job", "\x1b[2J"],
])
def test_argv_found_or_feared(argv, sealed, capsys):
    rc, _out, err = _run(argv, capsys)
    _check(argv, rc, err)


def test_a_replay_dir_name_too_long_is_one_line(sealed, capsys):
    """Before Python 3.14, Path.is_dir() raises ENAMETOOLONG for a name over NAME_MAX."""
    argv = ["--replay", "x" * 5000, "snapshot"]
    rc, _out, err = _run(argv, capsys)
    _check(argv, rc, err)
    assert rc == 2 and "--replay" in err and len(err) < 400, err


def test_a_huge_hostlist_is_refused(sealed, tmp_path):
    """node[1-99999999] would be expanded in memory by ClusterShell (100 million names
    took 17 GB here): cockpit/hostlist.py counts the names first and refuses it. Run in
    a child limited to 1 GB of address space, so a regression cannot take the machine's
    memory."""
    import resource
    import subprocess

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    code = "import sys; from cockpit.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run([sys.executable, "-c", code, "exec", "node[1-99999999]", "--", "true"],
                          capture_output=True, text=True, timeout=120, preexec_fn=limit)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])
    assert "node[1-99999999]" in proc.stderr and "internal error" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
