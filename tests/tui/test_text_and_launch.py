"""Sanitising cluster strings, and the no-cluster screen of a bare ``cockpit``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len

from cockpit.core.text import ELLIPSIS, clean, sanitize, tail_lines, truncate
from cockpit.tui.launch import local_slurm_problem
from cockpit.tui.screens.nocluster import NoClusterApp


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("plain", "plain"),
        ("red\x1b[31mtext\x1b[0m", "redtext"),
        ("osc\x1b]52;c;ZXZpbA==\x07end", "oscend"),
        ("line1\nline2\tx", "line1 line2 x"),
        ("bidi\u202egnp.exe", "bidignp.exe"),
        ("[bold]markup[/bold]", "[bold]markup[/bold]"),
        (None, ""),
    ],
)
def test_sanitize(raw, expected):
    assert sanitize(raw) == expected


def test_truncate_uses_cells_and_an_ellipsis():
    assert truncate("abcdef", 4) == "abc" + ELLIPSIS
    assert truncate("abc", 4) == "abc"
    assert cell_len(truncate("日本語テキスト", 5)) <= 5
    assert truncate("x", 0) == ""


@given(st.text(), st.integers(min_value=1, max_value=50))
def test_clean_never_leaks_controls_or_overflows(s, width):
    out = clean(s, width)
    assert "\x1b" not in out and "\n" not in out and "\x9b" not in out
    assert cell_len(out) <= width


def test_tail_lines_keeps_last_lines_and_last_carriage_return_state():
    data = b"a\nb\nprogress 10%\rprogress 100%\n\xff\x1b[2Jbad\n"
    assert tail_lines(data, 2) == ["progress 100%", "\ufffdbad"]


def test_no_scontrol_on_path_is_explained(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "scontrol is not on PATH" in local_slurm_problem()


def test_controller_not_answering_is_explained(monkeypatch, tmp_path):
    fake = tmp_path / "scontrol"
    fake.write_text("#!/bin/sh\necho 'Slurmctld(primary) at head is DOWN'\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "does not answer" in local_slurm_problem(timeout=5)


async def test_no_cluster_screen_says_how_to_connect():
    app = NoClusterApp("scontrol is not on PATH", None)
    async with app.run_test(size=(100, 30)) as pilot:
        text = "\n".join(s.text for s in app.screen._compositor.render_strips())
        assert "--demo" in text and "--host" in text and "scontrol is not on PATH" in text
        await pilot.press("q")
    assert app.return_code in (0, None)
