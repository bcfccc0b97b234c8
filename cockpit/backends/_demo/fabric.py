"""The simulated nodes' fabric as sysfs and ibstat show it, and the read-only
``find``/``grep`` the pre-flight fabric check reads it with.

Each node has eight ConnectX-7 HCAs (``mlx5_0``..``mlx5_7``, MT4129, firmware
28.41.1000, the board of the real H100 tree in tests/data/ib-sysfs), one
InfiniBand port each at ``400 Gb/sec (4X NDR)``, ``4: ACTIVE``, ``5: LinkUp``:
the GPU rails. The scenario's ``slow_nccl_node`` (dgx051) has rail 3 trained
at ``100 Gb/sec (4X EDR)``, the degraded rail its kernel dump and NCCL
bandwidth show too (_demo/kernel.py, _demo/nccl.py). Ethernet
(/sys/class/net): ``eno1`` at 10000 Mb/s up (management) and ``eno2`` down,
whose speed cannot be read (grep skips it with -s and exits 2, as on Linux);
``lo`` has no device. ibstat prints the same ports in its own layout (the
gpud recordings in tests/data/ibstat). Files are text without a comment line:
sysfs has none; the check's result says its probes were the demo's.
"""

from __future__ import annotations

import fnmatch
import posixpath
import zlib
from typing import Any

IB_ROOT = "/sys/class/infiniband"
NET_ROOT = "/sys/class/net"
RAILS = 8
SLOW_RAIL = 3
HCA = {"hca_type": "MT4129", "fw_ver": "28.41.1000", "board_id": "MT_0000000838"}
NETS = {"eno1": ("10000", "up"), "eno2": (None, "down")}  # speed (None: unreadable), operstate

Answer = tuple[int, bytes, bytes]


def rail_rate(sc: Any, node: str, rail: int) -> str:
    slow = node == sc.slow_nccl_node and rail == SLOW_RAIL
    return "100 Gb/sec (4X EDR)" if slow else "400 Gb/sec (4X NDR)"


def port_files(sc: Any, node: str, rail: int) -> dict[str, str]:
    """state, phys_state, rate, link_layer of ``mlx5_<rail>`` port 1."""
    return {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": rail_rate(sc, node, rail),
            "link_layer": "InfiniBand"}


def tree(sc: Any, node: str) -> dict[str, str | None]:
    """path -> file content, or None for a directory (links followed, as ``find -L`` sees them)."""
    out: dict[str, str | None] = {IB_ROOT: None, NET_ROOT: None}
    for rail in range(RAILS):
        hca = f"{IB_ROOT}/mlx5_{rail}"
        out.update({hca: None, f"{hca}/ports": None, f"{hca}/ports/1": None,
                    f"{hca}/node_guid": _guid(node, rail, ":")})
        out.update({f"{hca}/{k}": v for k, v in HCA.items()})
        out.update({f"{hca}/ports/1/{k}": v for k, v in port_files(sc, node, rail).items()})
    for iface, (speed, oper) in {**NETS, "lo": (None, "unknown")}.items():
        base = f"{NET_ROOT}/{iface}"
        out.update({base: None, f"{base}/operstate": oper, f"{base}/speed": speed or ""})
        if iface != "lo":
            out[f"{base}/device"] = None
    return out


def _guid(node: str, rail: int, sep: str = "") -> str:
    raw = f"946dae0300{zlib.crc32(f'{node}/{rail}'.encode()) & 0xFFFFFF:06x}"
    return sep.join(raw[i:i + 4] for i in range(0, 16, 4)) if sep else "0x" + raw


# ---------------------------------------------------------------- find


def _primaries(words: list[str]) -> list[list[tuple[str, str]]] | None:
    """``( -path P -o -name N ... )`` and implied ANDs as OR-groups of (test, arg); None when
    something is not one of the tests simulated (-type, -name, -path)."""
    words = [w for w in words if w not in ("(", ")")]
    groups: list[list[tuple[str, str]]] = [[]]
    i = 0
    while i < len(words):
        w = words[i]
        if w == "-o":
            groups.append([])
        elif w == "-a":
            pass
        elif w in ("-type", "-name", "-path") and i + 1 < len(words):
            groups[-1].append((w, words[i + 1]))
            i += 1
        else:
            return None
        i += 1
    return groups


def _match(test: str, arg: str, path: str, is_dir: bool) -> bool:
    if test == "-type":
        return arg == ("d" if is_dir else "f")
    if test == "-name":
        return fnmatch.fnmatchcase(posixpath.basename(path), arg)
    return fnmatch.fnmatchcase(path, arg)  # -path: '*' matches '/' too, as find's does


def find(sc: Any, node: str, args: list[str]) -> Answer | None:
    """``find -L ROOT [-mindepth N] [-maxdepth N] EXPR``."""
    words = list(args)
    if words[:1] != ["-L"] or len(words) < 2:
        return None
    root, words = words[1].rstrip("/") or "/", words[2:]
    depth = {"-mindepth": 0, "-maxdepth": 99}
    while len(words) >= 2 and words[0] in depth and words[1].isdecimal():
        depth[words[0]] = int(words[1])
        words = words[2:]
    groups = _primaries(words)
    if groups is None:
        return None
    files = tree(sc, node)
    if root not in files:
        return 1, b"", f"find: '{root}': No such file or directory\n".encode()
    hits = []
    for path, content in files.items():
        if path != root and not path.startswith(root + "/"):
            continue
        level = 0 if path == root else path[len(root) + 1:].count("/") + 1
        if not depth["-mindepth"] <= level <= depth["-maxdepth"]:
            continue
        if any(all(_match(t, a, path, content is None) for t, a in g) for g in groups):
            hits.append(path)
    return 0, "".join(f"{p}\n" for p in hits).encode(), b""


def grep(sc: Any, node: str, args: list[str]) -> Answer | None:
    """``grep -H -s . FILE...``: every non-empty line as ``FILE:LINE``."""
    if args[:3] != ["-H", "-s", "."] or len(args) < 4:
        return None
    files = tree(sc, node)
    out, rc = [], 1
    for path in args[3:]:
        content = files.get(path)
        if content is None or not content:  # missing, a directory, or unreadable (a down link's speed)
            rc = 2
            continue
        out += [f"{path}:{line}" for line in content.splitlines() if line]
        rc = 0 if rc == 1 else rc
    return rc, "".join(f"{ln}\n" for ln in out).encode(), b""


def ibstat(sc: Any, node: str) -> Answer:
    """``ibstat``: every CA, in name order."""
    lines = []
    lid0 = 100 + 8 * (zlib.crc32(node.encode()) % 64)
    for rail in sorted(range(RAILS), key=lambda r: f"mlx5_{r}"):
        f = port_files(sc, node, rail)
        guid = _guid(node, rail)
        lines += [f"CA 'mlx5_{rail}'", f"\tCA type: {HCA['hca_type']}", "\tNumber of ports: 1",
                  f"\tFirmware version: {HCA['fw_ver']}", "\tHardware version: 0", f"\tNode GUID: {guid}",
                  f"\tSystem image GUID: {guid}", "\tPort 1:", "\t\tState: Active", "\t\tPhysical state: LinkUp",
                  f"\t\tRate: {f['rate'].split()[0]}", f"\t\tBase lid: {lid0 + rail}",
                  "\t\tLMC: 0", "\t\tSM lid: 1", "\t\tCapability mask: 0xa751e848", f"\t\tPort GUID: {guid}",
                  "\t\tLink layer: InfiniBand"]
    return 0, ("\n".join(lines) + "\n").encode(), b""
