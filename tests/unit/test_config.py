"""Config discovery and strict validation."""

from __future__ import annotations

import pytest

from cockpit import config_example
from cockpit.config import Config, find_config_file, load_config, parse_config, plugin_config
from cockpit.errors import ConfigError
from cockpit.plugins.api import ConfigKey, Plugin


def test_defaults_when_no_file(tmp_path, monkeypatch):
    monkeypatch.delenv("COCKPIT_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setattr("cockpit.config.SYSTEM_CONFIG", tmp_path / "none.toml")
    assert find_config_file() is None
    assert load_config() == Config()


def test_search_order(tmp_path, monkeypatch):
    xdg = tmp_path / "xdg" / "cockpit"
    xdg.mkdir(parents=True)
    (xdg / "config.toml").write_text("[general]\nread_only = true\n")
    env = tmp_path / "env.toml"
    env.write_text("[general]\nbackend = 'demo'\n")
    explicit = tmp_path / "explicit.toml"
    explicit.write_text("[refresh]\njobs = 7\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("COCKPIT_CONFIG", raising=False)
    assert load_config().general.read_only is True
    monkeypatch.setenv("COCKPIT_CONFIG", str(env))
    assert load_config().general.backend == "demo"
    cfg = load_config(str(explicit))
    assert cfg.refresh.jobs == 7.0 and cfg.path == str(explicit)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[general]\nbogus = 1\n", "general.bogus"),
        ("[general]\nread_only = 'yes'\n", "general.read_only"),
        ("[refresh]\njobs = -1\n", "refresh.jobs"),
        ("[general]\nbackend = 'slurmrest'\n", "general.backend"),
        ("[nope]\n", "[nope]"),
        ("[general\n", "invalid TOML"),
        ("[clusters.a]\nhots = 'x'\n", "clusters.a.hots"),
    ],
)
def test_errors_name_file_and_key(text, needle):
    with pytest.raises(ConfigError) as exc:
        parse_config(text, "/etc/cockpit/config.toml")
    msg = str(exc.value)
    assert "/etc/cockpit/config.toml" in msg and needle in msg and "\n" not in msg


def test_missing_explicit_file_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="config file not found: .*missing.toml"):
        load_config(str(tmp_path / "missing.toml"))


def test_plugin_config_defaults_and_strictness():
    plugin = Plugin("demo", "d", config={"warn_ratio": ConfigKey(float, 0.9, "ratio")})
    cfg = parse_config("[plugins.demo]\nwarn_ratio = 0.5\n", "c.toml")
    assert plugin_config(cfg, plugin) == {"warn_ratio": 0.5}
    assert plugin_config(Config(), plugin) == {"warn_ratio": 0.9}
    with pytest.raises(ConfigError, match="plugins.demo.typo"):
        plugin_config(parse_config("[plugins.demo]\ntypo = 1\n", "c.toml"), plugin)
    with pytest.raises(ConfigError, match="plugins.demo.warn_ratio"):
        plugin_config(parse_config("[plugins.demo]\nwarn_ratio = 'x'\n", "c.toml"), plugin)


def test_example_config_is_current_and_valid():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "config.example.toml"
    text = path.read_text()
    assert text == config_example.render(), "regenerate: python -m cockpit.config_example > config.example.toml"
    cfg = parse_config(text, str(path))
    assert cfg.general == Config().general and cfg.ssh == Config().ssh


def test_example_renders_keys_toml_needs_quoted():
    import tomllib

    from cockpit.plugins.api import ConfigKey, Plugin

    plug = Plugin("x", "x", config={"expected": ConfigKey(dict, {"*": 32.0, "gpu-a100": 20.0, "a b": 1}, "per partition")})
    text = config_example.render([plug])
    assert tomllib.loads(text)["plugins"]["x"]["expected"] == {"*": 32.0, "gpu-a100": 20.0, "a b": 1}
    assert '{"*" = 32.0, gpu-a100 = 20.0, "a b" = 1}' in text
