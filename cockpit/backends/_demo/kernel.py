"""The simulated nodes' kernel logs (dmesg, journalctl -k) and InfiniBand sysfs.

Every node has a short boot log. The Xid-79 node's log then has what a real
one shows when a GPU falls off the bus (tests/data/xid-dmesg): the PCIe AER
error, the GPU's identity, ``NVRM: Xid (PCI:...): 79`` and the driver's own
fall-off line, a few seconds before it was drained. Time stamps come from the
node's boot time and the scenario's times, printed in UTC the way each tool
prints them (``dmesg``: seconds since boot, ``-T``: ctime, ``--time-format=iso``,
``journalctl -k``: syslog style).

InfiniBand: eight NDR ports per node, all healthy, except one rail of the slow
NCCL node, which trained at 100 Gb/s and keeps counting symbol errors (the
ports themselves are _demo/fabric.py's, which the fabric check reads).
"""

from __future__ import annotations

import time as _time
from typing import Any

from cockpit.backends._demo.fabric import RAILS, SLOW_RAIL, port_files
from cockpit.backends._demo.gpus import bus_id, gpu_uuid, lost_gpu, short_bus


def _boot_lines(node: str) -> list[tuple[float, str]]:
    return [
        (0.0, f"cockpit-demo: SIMULATED kernel log of {node} (cockpit --demo; nothing here ran)"),
        (0.0, "Linux version 6.8.0-51-generic (buildd@lcy02-amd64-091) (x86_64-linux-gnu-gcc-12 (Ubuntu 12.3.0-1ubuntu1~22.04) "
              "12.3.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #52~22.04.1-Ubuntu SMP PREEMPT_DYNAMIC"),
        (0.0, "Command line: BOOT_IMAGE=/boot/vmlinuz-6.8.0-51-generic root=UUID=3f1c2a9e ro iommu=pt pci=realloc=off"),
        (21.734512, "nvidia: loading out-of-tree module taints kernel."),
        (21.906118, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024"),
        (24.118230, "mlx5_core 0000:18:00.0: firmware version: 28.41.1000"),
        (26.502771, "nvidia-nvswitch: Probing device 0000:07:00.0, Vendor Id = 0x10de, Device Id = 0x22a3"),
    ]


def _xid_lines(backend: Any, node: str) -> list[tuple[int, str]]:
    """(epoch, message) of the GPU that fell off the bus, when this node is the Xid node."""
    sc = backend._sc
    if lost_gpu(sc, node) is None:
        return []  # not the Xid node, or rebooted since: a fresh log
    t = sc.xid_time
    gpu = sc.xid_gpu
    pci, port = short_bus(gpu), f"0000:{int(short_bus(gpu)[5:7], 16) - 1:02x}:01.1"
    return [
        (t - 1, f"pcieport {port}: AER: Uncorrected (Fatal) error message received from {bus_id(gpu)[4:].lower()}"),
        (t - 1, f"nvidia {bus_id(gpu)[4:].lower()}: PCIe Bus Error: severity=Uncorrected (Fatal), type=Inaccessible, (Unregistered Agent ID)"),
        (t, f"NVRM: GPU at PCI:{pci}: {gpu_uuid(node, gpu)}"),
        (t, "NVRM: GPU Board Serial Number: 1654323017512"),
        (t, f"NVRM: Xid (PCI:{pci}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
        (t, f"NVRM: GPU {bus_id(gpu)[4:].lower()}: GPU has fallen off the bus."),
        (t, "NVRM: A GPU crash dump has been created. If possible, please run"),
        (t, "NVRM: nvidia-bug-report.sh as root to collect this data before"),
        (t, "NVRM: the NVIDIA kernel module is unloaded."),
    ]


def _entries(backend: Any, node: str) -> list[tuple[float, str]]:
    """(epoch with fraction, message) in time order."""
    boot = backend._sc.sim.nodes[node].boot_time
    out = [(boot + off, msg) for off, msg in _boot_lines(node)]
    out += [(t + 0.000413 * i, msg) for i, (t, msg) in enumerate(_xid_lines(backend, node))]
    return out


_DMESG_FLAGS = {"-T": "ctime", "--ctime": "ctime", "-t": "notime", "--notime": "notime"}
_DMESG_QUIET = {"-k", "--kernel", "-x", "--decode", "-L", "--color=never", "--nopager", "-P"}


def dmesg(backend: Any, node: str, args: list[str]) -> tuple[int, bytes, bytes]:
    """``dmesg [-T|--ctime|-t|--time-format=FMT] [-k] [-x] [-L]``."""
    style = "raw"
    for a in args:
        if a in _DMESG_FLAGS:
            style = _DMESG_FLAGS[a]
        elif a.startswith("--time-format="):
            style = {"ctime": "ctime", "iso": "iso", "notime": "notime", "raw": "raw"}.get(a.split("=", 1)[1], "")
            if not style:
                return 1, b"", f"dmesg: unknown time format: {a.split('=', 1)[1]}\n".encode()
        elif a not in _DMESG_QUIET:
            return 1, b"", f"dmesg: unrecognized option '{a}'\nTry 'dmesg --help' for more information.\n".encode()
    boot = backend._sc.sim.nodes[node].boot_time
    lines = []
    for t, msg in _entries(backend, node):
        if style == "ctime":
            stamp = _time.strftime("[%a %b %e %H:%M:%S %Y] ", _time.gmtime(t))
        elif style == "iso":
            stamp = _time.strftime("%Y-%m-%dT%H:%M:%S", _time.gmtime(t)) + f",{int(t % 1 * 1e6):06d}+00:00 "
        elif style == "notime":
            stamp = ""
        else:
            stamp = f"[{t - boot:12.6f}] "
        lines.append(stamp + msg)
    return 0, ("\n".join(lines) + "\n").encode(), b""


def journalctl(backend: Any, node: str, args: list[str]) -> tuple[int, bytes, bytes] | None:
    """``journalctl -k`` (``--dmesg``), syslog-style lines; other journals are not simulated."""
    if not ({"-k", "--dmesg"} & set(args)):
        return None
    if any(a not in {"-k", "--dmesg", "--no-pager", "-q", "--quiet", "-b", "-b0", "--boot", "-o", "short"}
           for a in args):
        return None
    lines = [_time.strftime("%b %d %H:%M:%S", _time.gmtime(t)) + f" {node} kernel: {msg}"
             for t, msg in _entries(backend, node)]
    return 0, ("\n".join(lines) + "\n").encode(), b""


def is_ib_dump(args: list[str]) -> bool:
    """``sh -c SCRIPT`` where SCRIPT is the runbooks' fixed sysfs dump."""
    return len(args) == 2 and args[0] == "-c" and "/sys/class/infiniband/" in args[1] and "printf" in args[1]


def ib_dump(backend: Any, node: str) -> tuple[int, bytes, bytes]:
    """Every port file as ``path<TAB>value``, as the dump script prints it."""
    sc = backend._sc
    up = int(backend.clock()) - sc.sim.nodes[node].boot_time
    lines = []
    for rail in range(RAILS):
        slow = node == sc.slow_nccl_node and rail == SLOW_RAIL
        root = f"/sys/class/infiniband/mlx5_{rail}/ports/1"
        files = port_files(sc, node, rail)  # the same ports the fabric check reads (_demo/fabric.py)
        counters = {"symbol_error": 1_200 + 3 * max(up, 0) if slow else 0, "link_downed": 0,
                    "link_error_recovery": 2 if slow else 0, "port_rcv_errors": 0,
                    "local_link_integrity_errors": 0, "excessive_buffer_overrun_errors": 0,
                    "port_rcv_remote_physical_errors": 0, "port_xmit_discards": 0,
                    "port_xmit_data": 7_340_032 * max(up, 0), "port_rcv_data": 7_340_032 * max(up, 0)}
        hw = {"local_ack_timeout_err": 0, "out_of_sequence": 4 if slow else 0, "packet_seq_err": 0}
        lines += [f"{root}/{k}\t{v}" for k, v in files.items()]
        lines += [f"{root}/counters/{k}\t{v}" for k, v in counters.items()]
        lines += [f"{root}/hw_counters/{k}\t{v}" for k, v in hw.items()]
    return 0, ("\n".join(lines) + "\n").encode(), b""
