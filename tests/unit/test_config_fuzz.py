"""Fuzz the config loader: a cockpit config file with any bytes gives a Config or one
ConfigError line naming the file (and the key, where one is at fault), never another
exception.

Inputs: arbitrary bytes; TOML documents built from the real schema with values of any
TOML type (nan, inf, huge integers, control characters, 64 KB strings) under known and
unknown keys; and deep nesting. Example counts keep the file at a few seconds.
"""

from __future__ import annotations

import math
from dataclasses import fields

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockpit.config import SECTIONS, Cluster, Config, load_config, parse_config
from cockpit.errors import ConfigError

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
KNOWN = {name: [f.name for f in fields(cls)] for name, cls in SECTIONS.items()}


def toml_str(s: str) -> str:
    """A TOML basic string holding exactly ``s``."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return toml_str(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{toml_str(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


hostile_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30) | st.sampled_from(
    ["\x1b[31mred", "a\nb", "\u200b", "e\u0301", "\x1b]52;c;aGk=\x07", "", " ", "x" * 65536, "demo", "auto"])
scalar = (st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=True, allow_infinity=True)
          | hostile_text)
value = st.recursive(scalar, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(hostile_text, inner, max_size=3), max_leaves=6)
section = st.sampled_from([*SECTIONS, "clusters", "plugins", "bogus", "a\nb"])


@st.composite
def documents(draw) -> str:
    lines = []
    for name in draw(st.lists(section, max_size=4, unique=True)):
        if name in ("clusters", "plugins"):
            sub = draw(hostile_text)
            keys = [f.name for f in fields(Cluster)] if name == "clusters" else ["x"]
            lines.append(f"[{name}.{toml_str(sub)}]")
        else:
            keys = KNOWN.get(name, ["x"])
            lines.append(f"[{toml_str(name)}]")
        for key in draw(st.lists(st.sampled_from(keys) | hostile_text, max_size=4, unique=True)):
            lines.append(f"{toml_str(key)} = {toml_value(draw(value))}")
    return "\n".join(lines) + "\n"


def _check(text_or_bytes, tmp_path) -> Config | None:
    path = tmp_path / "cockpit.toml"
    if isinstance(text_or_bytes, bytes):
        path.write_bytes(text_or_bytes)
    else:
        path.write_text(text_or_bytes, encoding="utf-8")
    try:
        cfg = load_config(str(path))
    except ConfigError as exc:
        msg = str(exc)
        assert "\n" not in msg and "\x1b" not in msg and "\r" not in msg, msg
        assert str(path) in msg, msg
        return None
    for sec in SECTIONS:  # what loads is usable: finite, non-negative numbers
        for f in fields(getattr(cfg, sec)):
            v = getattr(getattr(cfg, sec), f.name)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                assert math.isfinite(v) and v >= 0, (sec, f.name, v)
    return cfg


@FUZZ
@given(data=st.binary(max_size=400))
def test_any_bytes(data, tmp_path_factory):
    _check(data, tmp_path_factory.mktemp("cfg"))


@FUZZ
@given(doc=documents())
def test_any_values_under_known_and_unknown_keys(doc, tmp_path_factory):
    _check(doc, tmp_path_factory.mktemp("cfg"))


@pytest.mark.parametrize("doc", [
    "a = " + "[" * 5000 + "]" * 5000,
    "a = " + "{b = " * 3000 + "1" + "}" * 3000,
    "[" + ".".join(["a"] * 5000) + "]",
])
def test_deep_nesting_is_one_line(doc, tmp_path):
    _check(doc, tmp_path)


@pytest.mark.parametrize(("section", "key"), [(s, k) for s, keys in KNOWN.items() for k in keys])
@pytest.mark.parametrize("bad", ["nan", "-inf", '"\\u001b]8;;http://x\\u0007"', "[1, 2]", "{a = 1}"])
def test_a_bad_value_names_the_file_and_the_key(section, key, bad, tmp_path):
    doc = f"[{section}]\n{key} = {bad}\n"
    path = tmp_path / "c.toml"
    path.write_text(doc)
    try:
        load_config(str(path))
    except ConfigError as exc:
        msg = str(exc)
        assert msg.startswith(f"{path}: ") and f"{section}.{key}" in msg and "\n" not in msg, msg
        assert "\x1b" not in msg and "\x07" not in msg, msg
        return
    # only a string key takes the OSC 8 string: then it must have been kept as given
    assert bad.startswith('"'), doc


def test_a_key_with_a_newline_or_escape_is_shown_escaped(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[general]\n"x\\n\\u001b[2J" = 1\n["y\\nz"]\n')
    with pytest.raises(ConfigError) as exc:
        load_config(str(path))
    assert str(exc.value) == f"{path}: unknown key 'general.x\\n\\x1b[2J' (known: audit_log, backend, " \
                             "command_timeout, demo_audit_log, host, read_only, slurm_bin_dir)"


def test_a_config_path_that_cannot_be_a_file_is_one_line(tmp_path):
    for name in ("x" * 5000, "a\nb\x1b[2J"):
        with pytest.raises(ConfigError) as exc:
            load_config(str(tmp_path / name))
        assert "\n" not in str(exc.value) and "\x1b" not in str(exc.value)


def test_the_same_checks_hold_for_parse_config():
    with pytest.raises(ConfigError, match=r"^'<x\\n>': invalid TOML"):
        parse_config("= =", "<x\n>")
