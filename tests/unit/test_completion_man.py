"""`cockpit completion SHELL` prints a completion script written from the argument
parser, asking no cluster; man/cockpit.1 is the parser's man page, regenerated here."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.unit.test_cli_headless import cockpit

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("shell,marker", [("bash", "_shtab_cockpit"), ("zsh", "#compdef cockpit"),
                                          ("fish", "complete -c cockpit"), ("tcsh", "complete cockpit")])
def test_completion_prints_a_script_for_each_shell(shell, marker):
    # no Slurm on PATH and a slurm.conf that is not there: completion must not care
    proc = cockpit("completion", shell, env={"PATH": "/usr/bin:/bin", "SLURM_CONF": "/nonexistent"})
    assert proc.returncode == 0, proc.stderr
    assert marker in proc.stdout and "snapshot" in proc.stdout


def test_bash_completion_completes_commands_and_choices(tmp_path):
    script = tmp_path / "cockpit.bash"
    script.write_text(cockpit("completion", "bash").stdout)
    probe = (f'source {script}; COMP_WORDS=(cockpit snap); COMP_CWORD=1; _shtab_cockpit; echo "${{COMPREPLY[@]}}"; '
             'COMP_WORDS=(cockpit snapshot --format ""); COMP_CWORD=3; _shtab_cockpit; echo "${COMPREPLY[@]}"')
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert out.stdout.splitlines() == ["snapshot", "table json tsv csv"], out.stderr


def test_a_bad_shell_is_refused():
    proc = cockpit("completion", "powershell")
    assert proc.returncode == 2 and "invalid choice: 'powershell'" in proc.stderr


def test_the_shipped_man_page_is_the_parsers():
    pytest.importorskip("argparse_manpage")
    from cockpit.manpage import render

    page = render()
    assert page == (ROOT / "man" / "cockpit.1").read_text(), "regenerate: python -m cockpit.manpage > man/cockpit.1"
    assert page.startswith('.TH COCKPIT "1"') and "completion" in page and "\\-\\-format" in page
    assert "include man/cockpit.1" in (ROOT / "MANIFEST.in").read_text()


@pytest.mark.skipif(shutil.which("man") is None, reason="no man here")
def test_man_renders_the_page():
    out = subprocess.run(["man", "-l", str(ROOT / "man" / "cockpit.1")], capture_output=True, text=True,
                         timeout=30, env={"MANPAGER": "cat", "PAGER": "cat", "COLUMNS": "80", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0 and "COCKPIT(1)" in out.stdout
