"""`cockpit snapshot` tables: key columns whole at any width, lists cut first, whole in a
pipe, TSV/CSV for scripts; `--state` checked against Slurm's states and codes."""

from __future__ import annotations

import csv
import io
import json

import pytest

from cockpit.commands._columns import Column, fit, text_lines
from cockpit.commands._tables import index_ranges
from cockpit.core.filtering import parse_state_filter
from cockpit.errors import UsageError
from tests.unit.test_cli_headless import cockpit


def _demo(*args, columns=None):
    env = {"COLUMNS": str(columns)} if columns else {"COLUMNS": ""}
    proc = cockpit("--demo", "snapshot", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def doc():
    return json.loads(_demo("--format", "json"))


def _cells(text: str) -> set[str]:
    return {c for line in text.splitlines() for c in line.split()}


def test_fit_narrows_only_cut_columns_in_their_order():
    cols = (Column("ID"), Column("LIST", 1), Column("WHY", 2, 5))
    rows = [("job-1234567", "a" * 30, "b" * 30)]
    assert fit(cols, rows, None) == [11, 30, 30]
    assert fit(cols, rows, 60) == [11, 15, 30]  # the list gives way first
    assert fit(cols, rows, 30) == [11, 4, 11]  # then the reason
    assert fit(cols, rows, 10) == [11, 4, 5]  # never below a header (or its floor); a key never
    line = text_lines(cols, rows, 30)[1]
    assert line.startswith("job-1234567  aaa…  ") and len(line) <= 30


def test_index_ranges():
    assert index_ranges((0, 1, 2, 3, 4, 5, 6, 7)) == "0-7"
    assert index_ranges((6, 0, 1, 3)) == "0-1,3,6"
    assert index_ranges(()) == ""


@pytest.mark.parametrize("columns", [80, 160])
def test_keys_whole_at_a_terminal_width(doc, columns):
    out = _demo(columns=columns)
    cells = _cells(out)
    for j in doc["jobs"]:
        assert j["display_id"] in cells and j["user"] in cells, j["display_id"]
    for n in doc["nodes"]:
        assert n["name"] in cells
    assert max(len(line) for line in out.splitlines() if line.startswith("dgx")) <= columns


def test_a_pipe_gets_every_cell_whole(doc):
    out = _demo("--format", "table")
    assert "…" not in out
    for j in doc["jobs"]:
        line = next(ln for ln in out.splitlines() if ln.split(" ", 1)[0] == j["display_id"])
        assert j["user"] in line.split()


@pytest.mark.parametrize("fmt", ["tsv", "csv"])
def test_tsv_and_csv_hold_every_row_whole(doc, fmt):
    out = _demo("--format", fmt, "--table", "jobs")
    rows = list(csv.reader(io.StringIO(out), delimiter="\t" if fmt == "tsv" else ","))
    assert rows[0][:3] == ["JOBID", "NAME", "USER"]
    assert [(r[0], r[2]) for r in rows[1:]] == [(j["display_id"], j["user"]) for j in doc["jobs"]]
    assert {r[1] for r in rows[1:]} >= {"llama-70b-pretrain", "[red]eval[/red]"}  # markup is text


def test_all_tables_in_tsv_are_separated_by_a_blank_line(doc):
    blocks = _demo("--format", "tsv").split("\n\n")
    assert [b.split("\t", 1)[0] for b in blocks] == ["NODE", "JOBID", "SWITCH/BLOCK"]
    assert len(blocks[0].splitlines()) == len(doc["nodes"]) + 1


def test_state_codes_and_names():
    f = parse_state_filter("PD,r,drng,idle")
    assert f.jobs == {"PENDING", "RUNNING"} and f.nodes == {"draining", "idle"}
    both = parse_state_filter("completing")
    assert both.jobs == {"COMPLETING"} and both.nodes == {"completing"}
    assert parse_state_filter("mix").nodes == {"mixed"} and parse_state_filter("CG").jobs == {"COMPLETING"}


@pytest.mark.parametrize("bad", ["bogus", "PD,nope", ",", "runing"])
def test_an_unknown_state_is_refused(bad):
    with pytest.raises(UsageError) as err:
        parse_state_filter(bad)
    assert repr(bad.split(",")[-1] or bad) in str(err.value) or "no state" in str(err.value)


def test_snapshot_state_bogus_exits_2_naming_it():
    proc = cockpit("--demo", "snapshot", "--state", "bogus")
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "'bogus'" in lines[0] and " pd," in lines[0] and " drain," in lines[0]


def test_snapshot_state_filters_by_code(doc):
    pend = json.loads(_demo("--format", "json", "--state", "PD"))
    assert pend["jobs"] and {j["state"] for j in pend["jobs"]} == {"PENDING"} and not pend["nodes"]
    assert len(pend["jobs"]) == sum(j["state"] == "PENDING" for j in doc["jobs"])
    drain = json.loads(_demo("--format", "json", "--state", "drain"))
    assert {n["display_state"] for n in drain["nodes"]} == {"drained", "draining"}
