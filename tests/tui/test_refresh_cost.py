"""What keeps a refresh cheap at 100k jobs, checked for correctness here (the
figures are bench/bench_tui.py's): a refresh repaints only the lines whose row
changed, clock cells (elapsed time) still move on, a cursor move repaints the two
lines it touches, and no finished worker keeps an old snapshot alive."""

from __future__ import annotations

import dataclasses
import gc

from textual.geometry import Region

from cockpit.models import ClusterSnapshot, record_replace
from cockpit.tui.widgets import vtable

from .fakes import NOW, FakeBackend
from .test_pilot import make_app, screen_text, settle


def spy_repaints(monkeypatch) -> list:
    """The regions of every VTable.refresh call from now on (() = the whole table)."""
    repainted: list = []
    orig = vtable.VTable.refresh

    def spy(self, *regions, **kw):
        repainted.append(regions)
        return orig(self, *regions, **kw)

    monkeypatch.setattr(vtable.VTable, "refresh", spy)
    return repainted


async def open_jobs(pilot, app):
    """The jobs view, loaded."""
    await settle(pilot, app)
    await pilot.press("5")
    await settle(pilot, app)


async def refresh(pilot, app):
    app.poller.refresh_now()
    await app.poller.poll_once()
    await settle(pilot, app)


async def test_a_changed_row_is_repainted_and_clock_cells_move_on(monkeypatch):
    backend = FakeBackend()
    now = [float(NOW)]
    app = make_app(backend, clock=lambda: now[0])
    async with app.run_test(size=(140, 30)) as pilot:
        await open_jobs(pilot, app)
        table = app.main.active_table()
        assert "llama-70b" in screen_text(app) and "2h00m" in screen_text(app)
        repainted = spy_repaints(monkeypatch)
        jobs = list(backend.jobs)
        jobs[0] = record_replace(jobs[0], name="llama-405b")
        backend.jobs = tuple(jobs)
        await refresh(pilot, app)
        text = screen_text(app)
        assert "llama-405b" in text and "llama-70b" not in text and "eval" in text
        # one line, not the table: the other rows on screen did not change
        assert repainted and all(len(r) == 1 and r[0].height == 1 for r in repainted), repainted
        # the clock moves; once LIVE_REPAINT has passed, the second tick repaints the TIME cells
        now[0] += 65
        monkeypatch.setattr(vtable, "LIVE_REPAINT", 0.0)
        app._tick()
        await settle(pilot, app)
        assert "2h01m" in screen_text(app)
        assert table.cursor_key() == 101


async def test_a_cursor_move_repaints_two_lines(monkeypatch):
    app = make_app(FakeBackend())
    async with app.run_test(size=(140, 30)) as pilot:
        await open_jobs(pilot, app)
        table = app.main.active_table()
        repainted = spy_repaints(monkeypatch)
        await pilot.press("down")
        await pilot.pause()
        assert table.cursor == 1
        lines = sorted(r[0].y for r in repainted if r)
        assert lines == [1, 2] and all(r and r[0] == Region(0, r[0].y, table.size.width, 1) for r in repainted)
        await pilot.press("up")
        await pilot.pause()
        assert table.cursor_key() == 101


async def test_a_refresh_that_changed_nothing_on_screen_repaints_no_line(monkeypatch):
    """The cursor stays on its row: set_data asks for no screen update at all (each
    compositor pass costs ~1 ms of the UI thread whatever it repaints)."""
    backend = FakeBackend()
    app = make_app(backend)
    async with app.run_test(size=(140, 30)) as pilot:
        await open_jobs(pilot, app)
        await pilot.press("down")
        await settle(pilot, app)
        table = app.main.active_table()
        builds = app.main.views["jobs"].builds
        repainted = spy_repaints(monkeypatch)
        backend.jobs = tuple(record_replace(j) for j in backend.jobs)  # equal, rebuilt: nothing to show
        await refresh(pilot, app)
        assert app.main.views["jobs"].builds > builds  # the table did take the new data
        assert repainted == [] and table.cursor == 1
        jobs = list(backend.jobs)  # the row under the cursor changes: its line, not the table
        jobs[1] = record_replace(jobs[1], name="renamed-job")
        backend.jobs = tuple(jobs)
        await refresh(pilot, app)
        assert "renamed-job" in screen_text(app)
        assert repainted == [(Region(0, 2, table.size.width, 1),)], repainted


async def test_a_line_is_drawn_as_one_segment():
    """Textual's compositor, its filters and the terminal writer work per segment: a
    row (one style across its cells) is one segment, not one per column."""
    app = make_app(FakeBackend())
    async with app.run_test(size=(140, 30)) as pilot:
        await open_jobs(pilot, app)
        table = app.main.active_table()
        for y in (0, 1, 2):  # the header, the cursor row, another row
            strip = table.render_line(y)
            segments = list(strip)
            assert len(segments) == 1, segments
            assert strip.cell_length == table.size.width
        assert "llama-70b" in table.render_line(1).text


async def test_workers_are_not_given_snapshots():
    # Textual keeps a worker's arguments in the Worker object, and a finished worker
    # can sit in a reference cycle (with its task and events) until the cyclic GC
    # runs; the poller freezes the heap after each poll (settle_heap), so a snapshot
    # passed to a worker was kept for an hour: at 100k jobs, every job version of
    # every refresh (bench/bench_tui.py saw the app grow ~1.5 MB a refresh). The
    # views' and the pulse's workers read the newest snapshot from their widget.
    app = make_app(FakeBackend(jobs_extra=50))
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, app)
        for key in "12345":  # every view builds at least once
            await pilot.press(key)
            await settle(pilot, app)
            await refresh(pilot, app)
        workers = [o for o in gc.get_objects() if type(o).__name__ == "Worker"]
        assert {w.group for w in workers} >= {"build", "pulse"}
        for w in workers:
            work = w._work
            given = (*getattr(work, "args", ()), *getattr(work, "keywords", {}).values())
            assert not any(isinstance(a, ClusterSnapshot) for a in given), (w.group, w.name)


def test_the_gpu_views_rows_by_node_leave_the_collectors_walks():
    """What the GPU view keeps per node between refreshes is tuples of untracked records,
    which a collection untracks: a list per node kept 20k lists (166k references) in
    every thaw's walk at 20k nodes (bench_tui --view gpus, BENCH_BREAKDOWN=1)."""
    from cockpit.tui.widgets.views import GpusView

    from .fakes import small_cluster

    nodes, jobs, parts, topo = small_cluster()
    view = GpusView(clock=lambda: NOW)
    view.build_rows(ClusterSnapshot(nodes=nodes, partitions=parts, jobs=jobs, topology=topo, fetched_at=NOW))
    gc.collect()  # untracks the tuples of records; the next, the tuples of those tuples
    gc.collect()
    assert view._node_rows and not any(map(gc.is_tracked, view._node_rows.values()))


def test_gpu_rows_are_rebuilt_only_for_nodes_whose_holders_changed():
    from cockpit.tui.widgets.views import GpusView

    from .fakes import small_cluster

    nodes, jobs, parts, topo = small_cluster()
    view = GpusView(clock=lambda: NOW)
    snap = ClusterSnapshot(nodes=nodes, partitions=parts, jobs=jobs, topology=topo, fetched_at=NOW)
    first = {r.key: r for r in view.build_rows(snap)}
    assert first["gpu01:0"].values[4] == "101" and first["gpu02:1"].values[4] == "100_3"
    moved = list(jobs)
    moved[0] = record_replace(jobs[0], user="zed")  # job 101 holds gpu01's GPUs
    again = {r.key: r for r in view.build_rows(dataclasses.replace(snap, jobs=tuple(moved)))}
    assert again.keys() == first.keys()
    assert again["gpu01:0"].values[5] == "zed" and again["gpu01:0"] is not first["gpu01:0"]
    assert all(again[k] is first[k] for k in first if not k.startswith("gpu01:"))  # reused, not rebuilt


async def test_a_hidden_pulse_waits_for_the_whole_first_load(monkeypatch):
    """A big first load is published in parts (snapshot.loading names the kind). The
    Pulse computes over every job so far, and its extras rebuild the jobs table: off
    screen it skips the parts and computes the whole load, or the part it has when
    shown. On screen it follows each part."""
    from cockpit.tui.widgets import pulse as pulse_mod

    computed: list = []
    real = pulse_mod.compute
    monkeypatch.setattr(pulse_mod, "compute", lambda snap, *a, **kw: (computed.append(snap), real(snap, *a, **kw))[1])
    app = make_app(FakeBackend())
    async with app.run_test(size=(140, 30)) as pilot:
        await open_jobs(pilot, app)
        whole = app.snapshot
        part = dataclasses.replace(whole, jobs=whole.jobs[:1], loading=("jobs",))
        computed.clear()
        app.main.update_snapshot(part)
        await settle(pilot, app)
        assert app.main.active_table().row_count == 1, "the view on screen shows the part"
        assert computed == [], "the hidden Pulse did not compute the part"
        await pilot.press("1")
        await settle(pilot, app)
        assert computed and computed[-1] is part, "shown, it computes what it has"
        computed.clear()
        app.main.update_snapshot(dataclasses.replace(part, jobs=whole.jobs[:2]))
        await settle(pilot, app)
        assert len(computed) == 1 and len(computed[0].jobs) == 2, "on screen, it follows each part"
        await pilot.press("5")
        await settle(pilot, app)
        computed.clear()
        app.main.update_snapshot(whole)
        await settle(pilot, app)
        assert computed == [whole], "the whole load is computed, shown or not"


async def test_the_status_line_is_repainted_only_when_its_text_changes(monkeypatch):
    backend = FakeBackend()
    app = make_app(backend)
    async with app.run_test(size=(140, 30)) as pilot:
        await open_jobs(pilot, app)
        view = app.main.views["jobs"]
        shown: list = []
        real = view.status_line.update
        monkeypatch.setattr(view.status_line, "update", lambda text, **kw: (shown.append(text.plain), real(text, **kw)))
        jobs = list(backend.jobs)
        n = len(jobs)
        jobs[0] = record_replace(jobs[0], name="renamed")  # a row changes, the count does not
        backend.jobs = tuple(jobs)
        builds = view.builds
        await refresh(pilot, app)
        assert view.builds > builds and shown == [], "the same text: no repaint"
        backend.jobs = tuple(jobs[1:])  # one job fewer: the count changes
        await refresh(pilot, app)
        assert len(shown) == 1 and shown[0].startswith(f" Jobs: {n - 1}")
        assert f"Jobs: {n - 1}" in screen_text(app)


async def test_a_clock_tick_repaints_only_the_lines_whose_elapsed_time_reads_otherwise(monkeypatch):
    now = [float(NOW)]
    app = make_app(FakeBackend(), clock=lambda: now[0])
    async with app.run_test(size=(140, 30)) as pilot:
        await open_jobs(pilot, app)
        table = app.main.active_table()
        monkeypatch.setattr(vtable, "LIVE_REPAINT", 0.0)
        top = int(table.scroll_y)
        on_screen = list(table.data.order[top:top + table.size.height - 1])
        texts = {k: table._row_texts(table.data.rows[k], now[0]) for k in on_screen}
        repainted = spy_repaints(monkeypatch)
        now[0] += 2  # "2h00m" still reads 2h00m; only an elapsed time under an hour shows seconds
        app._tick()
        await pilot.pause()
        assert () not in repainted, "no whole-table repaint"
        moved = {k for k in on_screen if table._row_texts(table.data.rows[k], now[0]) != texts[k]}
        lines = sorted(r[0].y for r in repainted if r)
        assert lines == sorted(on_screen.index(k) + 1 for k in moved)
        assert len(moved) < len(on_screen), "the fake queue has jobs over an hour old"
        now[0] += 65
        app._tick()
        await settle(pilot, app)
        assert "2h01m" in screen_text(app)
