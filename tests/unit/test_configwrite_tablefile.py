"""Saving one [tui] key into the operator's config file, and writing a table to CSV/JSON
(the TUI's column chooser and export)."""

from __future__ import annotations

import csv
import json

import pytest

from cockpit.config import Config, load_config
from cockpit.core.configwrite import save_tui_key, with_key
from cockpit.core.tablefile import write_table
from cockpit.errors import ConfigError, UsageError


def test_a_key_is_replaced_or_added_and_the_rest_of_the_file_kept(tmp_path):
    text = '# mine\n[general]\nread_only = true\n[tui]\ntheme = "nord"\n[ssh]\nuser = "op"\n'
    out = with_key(text, "tui", "hidden_columns_jobs", "NAME,NODES")
    assert out.startswith("# mine\n[general]\nread_only = true\n[tui]\n") and 'user = "op"' in out
    assert with_key(out, "tui", "hidden_columns_jobs", "NAME").count("hidden_columns_jobs") == 1
    assert with_key("[general]\n", "tui", "k", "v").endswith('\n[tui]\nk = "v"\n')


def test_saved_to_the_file_read_and_read_back(tmp_path):
    f = tmp_path / "config.toml"
    f.write_text('[tui]\ntheme = "nord"\n')
    assert save_tui_key(Config(path=str(f)), "hidden_columns_nodes", 'BY,"AGE"') == f
    cfg = load_config(str(f))
    assert cfg.tui.hidden_columns_nodes == 'BY,"AGE"' and cfg.tui.theme == "nord"


def test_a_bad_key_or_an_unwritable_place_is_one_line(tmp_path):
    f = tmp_path / "config.toml"
    f.write_text("[tui]\n")
    with pytest.raises(ConfigError, match="unknown key tui.nope"):
        save_tui_key(Config(path=str(f)), "nope", "x")
    assert f.read_text() == "[tui]\n"  # left as it was
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="cannot write"):
        save_tui_key(Config(path=str(blocker / "config.toml")), "hidden_columns_jobs", "NAME")


def test_csv_and_json_hold_the_rows_as_given(tmp_path):
    rows = [["1", "=HYPERLINK(x)", "-3"], ["2", "train", "-x"]]
    write_table(str(tmp_path / "t.csv"), ["ID", "NAME", "N"], rows)
    got = list(csv.reader((tmp_path / "t.csv").read_text().splitlines()))
    assert got == [["ID", "NAME", "N"], ["1", "'=HYPERLINK(x)", "-3"], ["2", "train", "'-x"]]
    write_table(str(tmp_path / "t.json"), ["ID", "NAME", "N"], rows)
    assert json.loads((tmp_path / "t.json").read_text())[0] == {"ID": "1", "NAME": "=HYPERLINK(x)", "N": "-3"}
    with pytest.raises(UsageError, match="is a directory"):
        write_table(str(tmp_path), ["ID"], [])
    with pytest.raises(UsageError, match="cannot write"):
        write_table(str(tmp_path / "no" / "x.csv"), ["ID"], [])
