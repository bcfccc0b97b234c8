"""GPU rows (cockpit/tui/gpurows.py): the cells and values a GpuRow makes when asked,
and the sharing that keeps 80k of them small."""

from cockpit.tui.gpurows import GpuRow, gpu_rows
from cockpit.tui.livetable import LiveTable
from cockpit.tui.rows import gpu_holders

from .fakes import small_cluster


def _rows(telemetry=None):
    nodes, jobs, _parts, _topo = small_cluster()
    holders = gpu_holders(jobs)
    return {r.key: r for n in nodes for r in gpu_rows(n, holders, telemetry or {})}


def test_gpu_row_cells_and_values_as_the_view_shows_them():
    rows = _rows({("gpu02", 1): {"util": 87.4, "mem": 50.0, "temp": 61.0, "power": 300.2, "ecc": 0, "throttle": "none"}})
    held = rows["gpu02:1"]
    assert held.cells == ("gpu02", "1", "h100", "◐ mixed", "100_3", "bob", "", "87", "50", "61", "300", "0", "none")
    assert held.values == ("gpu02", 1, "h100", "mixed", "100_3", "bob", "", 87.4, 50.0, 61.0, 300.2, 0, "none")
    assert held.style == "alloc" and held.extra == ""
    idle = rows["gpu02:5"]
    assert idle.cells[4:] == ("", "", "idle in alloc node", "", "", "", "", "", "")
    assert idle.values[7:] == (None,) * 6 and idle.style == "idlegpu"
    drained = rows["gpu03:7"]
    assert drained.cells[6] == "on drained node" and drained.style == "drain"
    assert rows["gpu10:0"].cells[6] == "free" and rows["gpu10:0"].style == "idle"
    assert "bob" in held.haystack and "100_3" in held.haystack


def test_gpu_rows_share_their_node_parts_and_keep_no_tuples_of_their_own():
    rows = _rows()
    a, b = rows["gpu01:0"], rows["gpu01:7"]
    assert a.shared is b.shared and a.job_id is b.job_id  # one node tuple, one job id string
    assert rows["gpu03:1"].note is rows["gpu03:6"].note
    assert not hasattr(a, "__dict__")
    assert a == GpuRow(a.key, tuple(a.shared), 0, "101", "alice", "alice", "", a.telemetry, "alloc")
    assert a != b


def test_live_table_measures_widths_over_every_chunk_of_rows(monkeypatch):
    import cockpit.tui.livetable as lt

    monkeypatch.setattr(lt, "SORT_CHUNK", 3)  # 40 rows: 14 chunks, the widest cell in the last
    rows = list(_rows().values())
    wide = rows[-1]
    rows[-1] = GpuRow(wide.key, wide.shared, wide.index, "123456789_1234", "u", "u", "", wide.telemetry, "alloc")
    data = LiveTable(lambda r: r, lambda r: r.key).update(rows)
    assert data.widths[4] == len("123456789_1234") and data.widths[6] == len("idle in alloc node")
