"""The pre-flight screens (Pilot): each runs its check from the form in its worker,
moves the progress bar to the end, shows the verdict, one row per node (or GPU) and
a plot; the burn-in's drain button goes through the gate (refused and audited in
read-only mode); cluster strings stay text, never markup."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.widgets import Button, DataTable, Input, Log, ProgressBar, Static
from textual_plotext import PlotextPlot

from cockpit.core.audit import AuditLog, read_audit
from cockpit_preflight import plugin
from cockpit_preflight.screen import BurninScreen, FabricScreen, StorageScreen
from pluginctx import make_ctx

DATA = Path(__file__).resolve().parents[1] / "data"
JOBS = DATA / "preflight-jobs"


class _App(App):
    def __init__(self, screen) -> None:
        super().__init__()
        self._screen = screen

    def on_mount(self) -> None:
        self.push_screen(self._screen)


async def _run(screen, log: str, **fields):
    async with _App(screen).run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        for name, value in {"log": log, **fields}.items():
            screen.query_one(f"#pf-{name}", Input).value = value
        screen.action_start()
        for _ in range(100):
            await pilot.pause(0.05)
            if screen.result is not None or "error" in str(screen.query_one("#pf-verdict", Static).render()):
                break
        table = screen.query_one("#pf-results", DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        verdict = str(screen.query_one("#pf-verdict", Static).render())
        bar = screen.query_one("#pf-progress", ProgressBar)
        plot = screen.query_one("#pf-plot", PlotextPlot).plt
        return screen, rows, verdict, (bar.progress, bar.total), plot, pilot


async def test_storage_screen_rows_bars_and_verdict():
    screen, rows, verdict, (done, total), plt, _ = await _run(
        StorageScreen(make_ctx(config={"storage_default_local_read_gbps": 0.02})),
        str(JOBS / "storage-fio-node02-03-node03-blkio-throttled.out"))
    assert verdict.startswith("CRIT: storage on node[02-03]") and "slow node: node03" in verdict
    assert [r[:4] for r in rows] == [["node02", "local", "ext4 /dev/loop0", "10.1"],
                                     ["node03", "local", "ext4 /dev/loop0", "0.00524"]]
    assert [r[-1] for r in rows] == ["OK", "CRIT"] and done == total
    assert len(plt._active.monitor.x) == 2  # one bar per node: local sequential read
    assert plt._active.monitor.title == "sequential GB/s per node"
    assert plugin.screens["preflight-storage"] == "cockpit_preflight.screen:StorageScreen"


async def test_burnin_screen_gpu_rows_plot_and_drain_through_the_gate(tmp_path):
    audit = AuditLog(tmp_path / "audit.jsonl")
    screen, rows, verdict, _, plt, pilot = await _run(
        BurninScreen(make_ctx(read_only=True, audit=audit)), str(JOBS / "burnin-torch-cpu-node01-02-standin.out"))
    assert "1 node(s) failing: node02" in verdict and "[CRIT] node02 gpu0: throttled under load" in verdict
    assert rows == [["node01", "0", "59.0", "629.45", "1980.0", "-", "OK"],
                    ["node02", "0", "-", "-", "382.0", "hw_power_brake_slowdown,hw_slowdown", "CRIT"]]
    # temperature and power over the burn-in: node01's recording has both, node02's excerpt neither
    assert plt._active.monitor.label == ["node01 gpu0 C", "node01 gpu0 W"]
    # before, four samples under load, after: 2 s apart (the job's interval)
    assert plt._active.monitor.y == [[59.0] * 6, [629.45] * 6] and plt._active.monitor.x[0] == [0, 2, 4, 6, 8, 10]


async def test_burnin_drain_button_is_refused_in_read_only_mode(tmp_path):
    audit = AuditLog(tmp_path / "audit.jsonl")
    screen = BurninScreen(make_ctx(read_only=True, audit=audit))
    async with _App(screen).run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        screen.query_one("#pf-log", Input).value = str(JOBS / "burnin-torch-cpu-node01-02-standin.out")
        screen.action_start()
        for _ in range(100):
            await pilot.pause(0.05)
            if screen.result is not None:
                break
        button = screen.query_one("#pf-drain", Button)
        assert not button.disabled
        await pilot.click("#pf-drain")
        for _ in range(50):
            await pilot.pause(0.05)
            if any("drain node02" in ln for ln in screen.query_one("#pf-messages", Log).lines):
                break
        lines = list(screen.query_one("#pf-messages", Log).lines)
    assert any(ln.startswith("drain node02: not done: read-only mode") for ln in lines), lines
    (rec,) = read_audit(tmp_path / "audit.jsonl")
    assert (rec["action"], rec["result"], rec["targets"]) == ("drain", "refused", ["node02"])


async def test_fabric_screen_rates_per_node():
    logs = " ".join([f"node01={DATA / 'ib-sysfs' / 'gpud-h100-8xndr'}",
                     f"node03={DATA / 'ib-sysfs' / 'procfs-fixture-hfi1-mlx4-mlx5'}"])
    screen, rows, verdict, _, plt, _ = await _run(FabricScreen(make_ctx()), logs, gpus="64")
    assert verdict.startswith("CRIT: log: 64 GPUs on 2 nodes, needs >= 400 Gb/s (800 recommended)")
    assert rows == [["node01", "infiniband", "400", "8", "9", "WARN"], ["node03", "infiniband", "100", "1", "4", "CRIT"]]


async def test_bad_input_is_shown_as_one_line_and_strings_are_text():
    screen, rows, verdict, _, _, _ = await _run(StorageScreen(make_ctx()), "/nonexistent/[bold]x.out")
    assert verdict == "error: cannot read --log '/nonexistent/[bold]x.out': No such file or directory" and rows == []
    screen, _, verdict, _, _, _ = await _run(StorageScreen(make_ctx()), "", params="70X")
    assert "bad --params '70X'" in verdict or "give --nodes" in verdict
