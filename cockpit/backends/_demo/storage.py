"""The simulated nodes' storage, and what the pre-flight storage job prints on each.

Every demo node has the same layout (a DGX-like node; nothing here ran):

| path | filesystem | what |
|---|---|---|
| ``/raid`` | xfs on ``/dev/md0``, md RAID0 over nvme2n1..nvme9n1 | local NVMe scratch, ~41 GB/s sequential read |
| ``/tmp``, ``/scratch`` | links into ``/raid`` | so ``--local /tmp`` (the default) measures the RAID0 |
| ``/`` (anything else) | ext4 on ``/dev/md1``, md RAID1 over nvme0n1, nvme1n1 | the OS mirror |
| ``/lustre`` | ``lustre 10.0.0.1@o2ib:/fs`` | the parallel filesystem: use ``--shared /lustre/ckpt`` |
| ``/home`` | ``nfs4 nfs01:/export/home`` | home directories on NFS (a finding as a checkpoint path) |

The scenario's ``slow_storage_node`` (dgx003 on the default cluster) has one NVMe
of its RAID0 (nvme5n1) trained at PCIe x1: the whole stripe waits for it, so its
/raid reads at ~31% and writes at ~40% of its peers', and fio's disk_util shows
that member busy all the time. The shared filesystems give each node its share
of their aggregate while every node of the job measures at once.

fio is installed (as ``fio`` and ``/usr/bin/fio``); any other ``storage_fio``
is missing, and the job falls back to dd and the shell loop, as the script does.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from cockpit.backends._demo import fio
from cockpit.backends._demo.nccl import jitter

FIO_PATHS = ("fio", "/usr/bin/fio")
LINKS = {"/tmp": "/raid/tmp", "/scratch": "/raid/scratch"}
SLOW_MEMBER = "nvme5n1"
# the slow node's /raid against a healthy one's (one member at PCIe Gen4 x1)
SLOW_FACTORS = {"seqread": 0.31, "seqwrite": 0.40, "randread": 0.48}


@dataclass(frozen=True)
class Mount:
    target: str
    fstype: str
    source: str
    statfs: str  # what stat -f -c %T prints
    raid: tuple[str, int] | None  # md level and disks
    members: tuple[str, ...]
    network: bool
    # per node when alone: sequential read, write (B/s), 4k random read IOPS; metadata ops/s
    read: float
    write: float
    randread: float
    meta: tuple[float, float, float]  # create, stat, unlink
    aggregate: float = 0.0  # a shared filesystem's total bandwidth, split among the nodes measuring


MOUNTS = {
    "/raid": Mount("/raid", "xfs", "/dev/md0", "xfs", ("raid0", 8), tuple(f"nvme{i}n1" for i in range(2, 10)),
                   False, 41.6e9, 24.9e9, 1.52e6, (41_800.0, 212_000.0, 61_300.0)),
    "/": Mount("/", "ext4", "/dev/md1", "ext2/ext3", ("raid1", 2), ("nvme0n1", "nvme1n1"), False,
               6.6e9, 3.2e9, 0.93e6, (38_900.0, 198_000.0, 55_100.0)),
    "/lustre": Mount("/lustre", "lustre", "10.0.0.1@o2ib:/fs", "lustre", None, (), True,
                     15.2e9, 11.4e9, 0.21e6, (6_800.0, 21_400.0, 7_900.0), aggregate=160e9),
    "/home": Mount("/home", "nfs4", "nfs01:/export/home", "nfs", None, (), True,
                   2.3e9, 1.15e9, 0.04e6, (1_100.0, 7_500.0, 1_400.0), aggregate=3.4e9),
}


def resolve(path: str) -> tuple[str, Mount]:
    """The real path (links followed) and the filesystem holding it."""
    real = posixpath.normpath(path)
    for link, target in LINKS.items():
        if real == link or real.startswith(link + "/"):
            real = target + real[len(link):]
    best = max((m for m in MOUNTS if m == "/" or real == m or real.startswith(m + "/")), key=len)
    return real, MOUNTS[best]


@dataclass(frozen=True)
class Params:
    """The storage job's arguments ($1..$12 of its node script)."""

    local: str
    shared: str
    fio: str
    size: str
    runtime: int
    bs: str
    iodepth: int
    numjobs: int
    ioengine: str
    direct: bool
    meta_files: int
    dd_mib: int

    @classmethod
    def from_args(cls, args: list[str]) -> Params:
        a = (args + [""] * 12)[:12]

        def num(text: str, default: int) -> int:
            return int(text) if text.isdecimal() and int(text) > 0 else default

        return cls(a[0], a[1], a[2] or "fio", a[3] or "1G", num(a[4], 30), a[5] or "1M", num(a[6], 32),
                   num(a[7], 4), a[8] or "libaio", a[9] != "0", num(a[10], 5000), num(a[11], 4096))


def _bytes(text: str) -> int:
    text = text.strip().upper().rstrip("B").rstrip("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(text[-1:], 1)
    digits = text[:-1] if scale > 1 else text
    return int(digits) * scale if digits.isdecimal() else 1 << 20


def _figures(mount: Mount, node: str, slow: bool, nodes: int, p: Params, key: str) -> dict[str, float]:
    """What this node measures on ``mount`` (B/s, IOPS, ops/s) with the job's parameters."""
    q = p.iodepth * p.numjobs
    bs = _bytes(p.bs)
    seq = q * bs / (q * bs + (3 << 20))  # a shallow queue of small blocks does not fill the drives
    share = min(1.0, mount.aggregate / mount.read / max(nodes, 1)) if mount.aggregate else 1.0
    wshare = min(1.0, mount.aggregate * 0.7 / mount.write / max(nodes, 1)) if mount.aggregate else 1.0
    out = {"seqread": mount.read * seq * share, "seqwrite": mount.write * seq * wshare,
           "randread": min(mount.randread, q / (85e-6 if not mount.network else 420e-6))}
    out["create"], out["stat"], out["unlink"] = (v * (share if mount.network else 1.0) for v in mount.meta)
    if slow and mount.target == "/raid":
        for k, f in SLOW_FACTORS.items():
            out[k] *= f
    return {k: v * jitter(f"{key}:{node}:{k}", 0.025) for k, v in out.items()}


def _fstype(mount: Mount) -> str:
    # findmnt pads its columns to their headers' widths (FSTYPE, SOURCE) even without them
    return f"{mount.fstype:<6} {mount.source:<6} {mount.target}"


def node_lines(node: str, job_id: int, start: int, p: Params, slow: bool, nodes: int) -> list[str]:
    """One node's task output: the header, then each path's sections, then done."""
    tool = "fio" if p.fio in FIO_PATHS else "dd"
    out = [f"@@preflight node={node} check=storage tool={tool} simulated=yes"]
    t = start + 1.0
    tag = f"cockpit-preflight-{job_id}-{node}"
    for kind, path in (("local", p.local), ("shared", p.shared)):
        if not path:
            continue
        _real, mount = resolve(path)
        out += [f"@@begin fstype path={kind}", _fstype(mount), "@@end rc=0",
                f"@@begin statfs path={kind}", mount.statfs, "@@end rc=0"]
        if mount.raid:
            out += [f"@@begin raid path={kind}", mount.raid[0], str(mount.raid[1]), "@@end rc=0"]
        fig = _figures(mount, node, slow, nodes, p, f"{job_id}:{kind}")
        disks = fio.Disks(mount.source.removeprefix("/dev/") if mount.raid else "", mount.members,
                          SLOW_MEMBER if slow and mount.target == "/raid" else "")
        directory = posixpath.join(path, tag)
        if tool == "fio":
            tests = [("seqwrite", "write", p.bs), ("seqread", "read", p.bs)]
            if kind == "local":
                tests.append(("randread", "randread", "4k"))
            for test, rw, bs in tests:
                t += p.runtime + 1 + (_bytes(p.size) * p.numjobs / fig["seqwrite"] if test == "seqwrite" else 0)
                bw = fig[test] if test != "randread" else fig["randread"] * 4096
                iops = fig["randread"] if test == "randread" else bw / _bytes(bs)
                out += [f"@@begin fio path={kind} test={test}"]
                out += fio.data_test(name=test, rw=rw, bs=bs, directory=directory, size=p.size, numjobs=p.numjobs,
                                     ioengine=p.ioengine, iodepth=p.iodepth, direct=p.direct, runtime=p.runtime,
                                     bw=bw, iops=iops, end=t, disks=disks).splitlines()
                out.append("@@end rc=0")
            if kind == "shared":
                for test in ("create", "stat", "unlink"):
                    t += p.meta_files / fig[test] + 0.2
                    out += [f"@@begin fio path={kind} test={test}"]
                    out += fio.meta_test(test=test, directory=f"{directory}/meta", nrfiles=p.meta_files,
                                         ops=fig[test], end=t, disks=disks).splitlines()
                    out.append("@@end rc=0")
        else:
            nbytes = p.dd_mib << 20
            for test in ("seqwrite", "seqread"):
                out += [f"@@begin dd path={kind} test={test}", *fio.dd_lines(nbytes, fig[test]), "@@end rc=0"]
            if kind == "shared":
                ops = [(op, fig[name]) for op, name in (("create", "create"), ("stat", "stat"), ("unlink", "unlink"))]
                out += [f"@@begin meta path={kind}", *fio.meta_loop_lines(p.meta_files, ops), "@@end rc=0"]
    out += ["@@begin done", "@@end rc=0"]
    return out
