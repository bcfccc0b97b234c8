"""The simulated nodes' GPUs as nvidia-smi reports them.

Each GPU's reading follows the scenario: the hung job's GPUs sit at 0%
utilisation with their memory still held, busy jobs run hot, idle GPUs idle
(clock event reason 0x1, gpu_idle), and on the Xid-79 node one GPU has fallen
off the bus: nvidia-smi prints the others, says the lost one cannot be
reached, and exits 15 (its documented code for a GPU that fell off the bus).
Values move with the demo clock in 15 s steps and are otherwise fixed.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from cockpit.backends._demo.state import RUNNING

GPU_NAME = "NVIDIA H100 80GB HBM3"
MEM_TOTAL = 81559  # MiB, as an H100 80GB reports it
# PCI buses of a DGX H100's eight GPUs; bigger demo nodes repeat them in the next PCI domains.
_BUSES = (0x1B, 0x43, 0x52, 0x61, 0x9D, 0xC3, 0xD1, 0xDF)
LOST_EXIT = 15
_UNITS = {
    "utilization.gpu": "%", "utilization.memory": "%", "memory.total": "MiB", "memory.used": "MiB",
    "power.draw": "W", "power.limit": "W", "clocks.current.sm": "MHz", "clocks.max.sm": "MHz",
}


def bus_id(index: int) -> str:
    """``00000000:1B:00.0``, nvidia-smi's form of the GPU's PCI bus id."""
    return f"{index // len(_BUSES):08X}:{_BUSES[index % len(_BUSES)]:02X}:00.0"


def short_bus(index: int) -> str:
    """``0000:1b:00``, as the kernel's NVRM lines and nccl-tests name it."""
    return bus_id(index)[4:-2].lower()


def gpu_uuid(node: str, index: int) -> str:
    h = f"{zlib.crc32(f'{node}/{index}'.encode()):08x}{zlib.crc32(f'{index}@{node}'.encode()):08x}"
    t = f"{zlib.crc32(node.encode()):08x}"
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{t[:4]}-{t[4:8]}{h[:8]}"


def lost_gpu(sc: Any, node: str) -> int | None:
    """The index of ``node``'s GPU that fell off the bus, until the node is rebooted."""
    if node != sc.xid_node or sc.sim.nodes[node].boot_time > sc.xid_time:
        return None
    return sc.xid_gpu


def _r(*key: object) -> float:
    """A deterministic number in [0, 1) for ``key``."""
    return (zlib.crc32("/".join(map(str, key)).encode()) % 10_000) / 10_000.0


@dataclass(frozen=True)
class Reading:
    util: int
    util_mem: int
    mem_used: int
    temp: int
    power: float
    clock: int
    reasons: int
    pcie_gen: int


def reading(kind: str, node: str, index: int, job_id: int | None, tick: int) -> Reading:
    """What one GPU shows now: ``kind`` is busy, hung or idle."""
    wob = _r(node, index, tick)
    if kind == "busy":
        held = 60_000 + int(_r(node, job_id) * 16_000)
        return Reading(88 + int(wob * 12), 30 + int(wob * 25), held + int(wob * 400), 62 + int(wob * 12),
                       round(560 + wob * 130, 2), 1980 - 15 * int(wob * 4), 0, 5)
    if kind == "hung":  # stuck in a collective that never completes: nothing runs, memory held
        return Reading(0, 0, 71_203 + index * 3, 41 + int(wob * 3), round(118 + wob * 7, 2), 1980, 0, 5)
    return Reading(0, 0, 0, 30 + int(wob * 5), round(68 + wob * 4, 2), 345, 0x1, 5)


def _value(field: str, node: str, index: int, rd: Reading) -> str | None:
    fixed: dict[str, Any] = {
        "index": index, "uuid": gpu_uuid(node, index), "name": GPU_NAME, "pci.bus_id": bus_id(index),
        "utilization.gpu": rd.util, "utilization.memory": rd.util_mem, "memory.total": MEM_TOTAL,
        "memory.used": rd.mem_used, "temperature.gpu": rd.temp, "temperature.memory": rd.temp + 7,
        "power.draw": f"{rd.power:.2f}", "power.limit": "700.00", "clocks.current.sm": rd.clock,
        "clocks.max.sm": 1980, "clocks_event_reasons.active": f"0x{rd.reasons:016X}",
        "clocks_throttle_reasons.active": f"0x{rd.reasons:016X}", "ecc.mode.current": "Enabled",
        "remapped_rows.correctable": 0, "remapped_rows.uncorrectable": 0, "remapped_rows.pending": "No",
        "remapped_rows.failure": "No", "pcie.link.gen.current": rd.pcie_gen, "pcie.link.gen.max": 5,
        "pcie.link.width.current": 16, "pcie.link.width.max": 16, "driver_version": "550.127.05",
        "serial": f"165{zlib.crc32(f'{node}:{index}'.encode()) % 10**10:010d}",
    }
    if field.startswith("ecc.errors."):
        return "0"
    value = fixed.get(field)
    return None if value is None else str(value)


class GpuView:
    """nvidia-smi on one simulated node."""

    def __init__(self, backend: Any, node: str) -> None:
        sc, self.node = backend._sc, node
        self.sim_node = sc.sim.nodes[node]
        self.lost = lost_gpu(sc, node)
        self.tick = int(backend.clock()) // 15
        self._jobs, self._hung = sc.sim.jobs, sc.hung_job_id

    def kind(self, index: int) -> tuple[str, int | None]:
        owner = self.sim_node.owners[index]
        job = self._jobs.get(owner) if owner is not None else None
        if job is None or job.state != RUNNING:
            return "idle", None
        return ("hung" if owner == self._hung else "busy"), owner

    def indexes(self) -> list[int]:
        return [i for i in range(self.sim_node.gpus) if i != self.lost]

    def lost_message(self) -> bytes:
        if self.lost is None:
            return b""
        bus = bus_id(self.lost)[4:]
        return f"Unable to determine the device handle for GPU{bus}: GPU is lost.  Reboot the system to recover this GPU\n".encode()

    def query_gpu(self, fields: list[str], header: bool, units: bool) -> tuple[int, bytes, bytes]:
        """``--query-gpu=FIELDS --format=csv[,noheader][,nounits]``."""
        bad = next((f for f in fields if _value(f, self.node, 0, reading("idle", self.node, 0, None, 0)) is None), None)
        if bad is not None:
            return 2, b"", f'Field "{bad}" is not a valid field to query.\n\n'.encode()
        lines = []
        if header:
            lines.append(", ".join(f + (f" [{_UNITS[f]}]" if f in _UNITS else "") for f in fields))
        for i in self.indexes():
            kind, job_id = self.kind(i)
            rd = reading(kind, self.node, i, job_id, self.tick)
            cells = [_value(f, self.node, i, rd) or "" for f in fields]
            if units:
                cells = [f"{c} {_UNITS[f]}" if f in _UNITS else c for c, f in zip(cells, fields)]
            lines.append(", ".join(cells))
        out = ("\n".join(lines) + "\n").encode() if lines else b""
        return (LOST_EXIT if self.lost is not None else 0), out, self.lost_message()

    def compute_apps(self, pids: dict[int, int], header: bool) -> tuple[int, bytes, bytes]:
        """``--query-compute-apps=pid,gpu_uuid``: ``pids`` maps each GPU process to its index."""
        lines = ["pid, gpu_uuid"] if header else []
        lines += [f"{pid}, {gpu_uuid(self.node, idx)}" for pid, idx in sorted(pids.items()) if idx != self.lost]
        out = ("\n".join(lines) + "\n").encode() if lines else b""
        return (LOST_EXIT if self.lost is not None else 0), out, self.lost_message()

    def list_gpus(self) -> tuple[int, bytes, bytes]:
        """``nvidia-smi -L``."""
        lines = [f"GPU {i}: {GPU_NAME} (UUID: {gpu_uuid(self.node, i)})" for i in self.indexes()]
        return (LOST_EXIT if self.lost is not None else 0), ("\n".join(lines) + "\n").encode(), self.lost_message()


    def nvlink_status(self) -> tuple[int, bytes, bytes]:
        """``nvidia-smi nvlink --status``: an H100's 18 NVLink4 links at 26.562 GB/s each."""
        lines = []
        for i in self.indexes():
            lines.append(f"GPU {i}: {GPU_NAME} (UUID: {gpu_uuid(self.node, i)})")
            lines += [f"\t Link {k}: 26.562 GB/s" for k in range(18)]
        return (LOST_EXIT if self.lost is not None else 0), ("\n".join(lines) + "\n").encode(), self.lost_message()


def nvidia_smi(backend: Any, node: str, args: list[str], gpu_pids: dict[int, int]) -> tuple[int, bytes, bytes] | None:
    """The simulated ``nvidia-smi ARGS`` on ``node``; None for what is not simulated."""
    view = GpuView(backend, node)
    if args == ["-L"]:
        return view.list_gpus()
    if args in (["nvlink", "--status"], ["nvlink", "-s"]):
        return view.nvlink_status()
    fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), None)
    query = next((a for a in args if a.startswith(("--query-gpu=", "--query-compute-apps="))), None)
    if query is None or fmt is None or len(args) != 2:
        return None
    opts = set(fmt.split(","))
    if "csv" not in opts or not opts <= {"csv", "noheader", "nounits"}:
        return None
    kind, _, fields = query.partition("=")
    names = [f.strip() for f in fields.split(",") if f.strip()]
    if kind == "--query-compute-apps":
        return view.compute_apps(gpu_pids, "noheader" not in opts) if names == ["pid", "gpu_uuid"] else None
    return view.query_gpu(names, "noheader" not in opts, "nounits" not in opts)
