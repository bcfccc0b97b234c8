"""Fuzz the runbook loader through the plugin's own API (cockpit_runbooks.load_runbooks):
a runbook file with any bytes either loads or becomes one LoadProblem naming the file
(and the key or line at fault), never an exception, and the bundled runbooks still load.

Inputs: arbitrary bytes; runbooks built from the real format (docs/runbooks.md) with values
of any TOML type under known and unknown keys; deep nesting.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockpit_runbooks import load_runbooks
from cockpit_runbooks.engine import PROBES, action_names
from test_config_fuzz import hostile_text, toml_str, toml_value, value

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TOP = ["name", "title", "description", "target"]
STEP = ["id", "title", "probe", "args", "via", "when", "next", "action", "params", "severity", "explain"]
good = st.sampled_from([*sorted(PROBES), *action_names(), "job", "node", "ssh", "auto", "end",
                        "finding:x", "!finding:job.not_running", "fact:a", "CRIT"])


@st.composite
def runbooks(draw) -> str:
    any_value = value | good | st.lists(good, max_size=2) | st.dictionaries(hostile_text, good, max_size=2)
    lines = [f"{toml_str(k)} = {toml_value(draw(any_value))}"
             for k in draw(st.lists(st.sampled_from(TOP) | hostile_text, max_size=4, unique=True))]
    for _ in range(draw(st.integers(0, 3))):
        lines.append("[[steps]]")
        for k in draw(st.lists(st.sampled_from(STEP) | hostile_text, max_size=5, unique=True)):
            lines.append(f"{toml_str(k)} = {toml_value(draw(any_value))}")
    return "\n".join(lines) + "\n"


def _load(content, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # no site runbooks but ours
    site = tmp_path / "site"
    site.mkdir()
    path = site / "fuzzed.toml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    base_books, base_problems = load_runbooks()  # without our file
    books, problems = load_runbooks((site,))
    ours = [p for p in problems if p.path == str(path)]
    loaded = [b for b in books.values() if b.path == str(path)]
    # the rest load as before (a loaded file may replace one of the same name)
    assert set(base_books) - {b.name for b in loaded} <= set(books)
    assert [p for p in problems if p.path != str(path)] == base_problems and len(ours) <= 1, problems
    assert len(ours) + len(loaded) == 1, (ours, loaded)
    for p in ours:
        text = str(p)
        assert text.startswith(f"{path}:") and "\n" not in text and "\x1b" not in text and "\r" not in text, text
    for book in loaded:  # what loads has the types the engine relies on
        assert book.target in ("job", "node") and book.steps
        for s in book.steps:
            assert isinstance(s.id, str) and isinstance(s.title, str) and s.via in ("auto", "local", "ssh", "srun")
            assert s.next is None or isinstance(s.next, str)
            assert all(isinstance(c, str) for c in s.when)
            assert s.probe in PROBES or s.action in action_names()
    return ours


@FUZZ
@given(data=st.binary(max_size=400))
def test_any_bytes(data, tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        _load(data, tmp_path_factory.mktemp("rb"), mp)


@FUZZ
@given(doc=runbooks())
def test_any_values_under_known_and_unknown_keys(doc, tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        _load(doc, tmp_path_factory.mktemp("rb"), mp)


STEP_OK = '[[steps]]\nid = "a"\nprobe = "kernel_xid"\n'


CASES = [
    ("a = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    (STEP_OK + "when = 5\n", "when"),
    (STEP_OK + "when = [1]\n", "bad condition"),
    ('[[steps]]\nid = "a"\nprobe = ["kernel_xid"]\n', "probe"),
    ('[[steps]]\nid = "a"\naction = {x = 1}\n', "action"),
    (STEP_OK + "next = 5\n", "next"),
    (STEP_OK + 'id = "b"\n', "TOML syntax error"),
    (STEP_OK + '"x\\n\\u001b[2J" = 1\n', "unknown key"),
    ('name = 5\n' + STEP_OK, "name"),
    (STEP_OK + "severity = {x = [1]}\n", "severity"),
    (STEP_OK + 'next = "' + "x" * 65536 + '"\n', "next names no step"),
]


@pytest.mark.parametrize(("doc", "needle"), CASES, ids=[needle for _, needle in CASES])
def test_found_by_fuzzing_one_problem_naming_the_key(doc, needle, tmp_path, monkeypatch):
    (problem,) = _load(doc, tmp_path, monkeypatch)
    assert needle in problem.message, problem
