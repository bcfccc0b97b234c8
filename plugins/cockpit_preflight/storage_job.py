"""The storage job: its script, and what each node's task printed, as figures.

Each node measures its local scratch (sequential write, sequential read, 4k
random read) and the shared path (sequential write, sequential read, file
creates/stats/deletes), all nodes at once: the shared figures are what each node
gets while every node of the job writes. fio runs with ``--output-format=json``;
where the node has no fio, dd gives the sequential figures and a shell loop the
metadata ones (random read is then not measured, and the result says so). The
filesystem of each path comes from ``findmnt -T`` and ``stat -f``; an md device
adds its RAID level from /sys/block/mdN/md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cockpit.plugins.api import CockpitError, ParseError, UsageError

from cockpit_preflight.common import NodeOutput, Placement, header, parse_job_output, srun_line
from cockpit_preflight.fio import META_ENGINES, parse_dd, parse_fio_json, parse_meta_loop

# Runs in each task: $1 local path, $2 shared path, $3 fio, $4 size, $5 runtime, $6 block
# size, $7 iodepth, $8 numjobs, $9 ioengine, $10 direct (1/0), $11 metadata files, $12 dd MiB.
NODE_SCRIPT = r'''
node=${SLURMD_NODENAME:-$(hostname -s)}
local_path=$1 shared_path=$2 fio=$3 size=$4 runtime=$5 bs=$6 qd=$7 nj=$8 engine=$9 direct=${10} nfiles=${11} ddmib=${12}
tag="cockpit-preflight-${SLURM_JOB_ID:-0}-$node"
if command -v "$fio" >/dev/null 2>&1; then tool=fio; else tool=dd; fi
echo "@@preflight node=$node check=storage tool=$tool"
tmp=$(mktemp -d) || { echo "@@error mktemp failed"; exit 1; }
trap 'rm -rf "$tmp"' EXIT
sect() {  # KIND ATTRS CMD...: stdout in the section, stderr in its own section
  local kind=$1 attrs=$2 rc; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
  echo "@@begin $kind $attrs"; cat "$tmp/out"; echo "@@end rc=$rc"
  if [ -s "$tmp/err" ]; then echo "@@begin stderr $attrs"; cat "$tmp/err"; echo "@@end rc=0"; fi
}
merged() {  # KIND ATTRS CMD...: stdout and stderr together (dd reports on stderr)
  local kind=$1 attrs=$2 rc; shift 2
  "$@" >"$tmp/out" 2>&1; rc=$?
  echo "@@begin $kind $attrs"; cat "$tmp/out"; echo "@@end rc=$rc"
}
meta_loop() {  # DIR N: time N creates, stats and unlinks with shell builtins (no fork per file)
  local d=$1 n=$2 i t0 t1
  mkdir -p "$d" || return 1
  t0=$(date +%s%N); for ((i = 0; i < n; i++)); do : >"$d/f$i" || return 1; done; t1=$(date +%s%N)
  echo "meta create files=$n ns=$((t1 - t0))"
  t0=$(date +%s%N); for ((i = 0; i < n; i++)); do [ -e "$d/f$i" ] || return 1; done; t1=$(date +%s%N)
  echo "meta stat files=$n ns=$((t1 - t0))"
  t0=$(date +%s%N); rm -f -- "$d"/f* || return 1; t1=$(date +%s%N)
  echo "meta unlink files=$n ns=$((t1 - t0))"
}
measure() {  # KIND PATH
  local kind=$1 path=$2 dir="$2/$tag" src md
  sect fstype "path=$kind" findmnt -n -o FSTYPE,SOURCE,TARGET -T "$path"
  sect statfs "path=$kind" stat -f -c %T "$path"
  src=$(findmnt -n -o SOURCE -T "$path" 2>/dev/null); src=${src%%\[*}  # a bind mount: /dev/md0[/tmp]
  case "$src" in /dev/md*) md=${src#/dev/}; sect raid "path=$kind" cat "/sys/block/$md/md/level" "/sys/block/$md/md/raid_disks";; esac
  if ! mkdir -p "$dir" 2>/dev/null; then echo "@@error path=$kind cannot create $dir"; return; fi
  if [ "$tool" = fio ]; then
    local common=(--directory="$dir" --filename_format='cockpit.$jobnum' --size="$size" --numjobs="$nj"
                  --group_reporting --ioengine="$engine" --iodepth="$qd" --direct="$direct"
                  --runtime="$runtime" --time_based --output-format=json)
    sect fio "path=$kind test=seqwrite" "$fio" --name=seqwrite --rw=write --bs="$bs" "${common[@]}"
    sect fio "path=$kind test=seqread" "$fio" --name=seqread --rw=read --bs="$bs" "${common[@]}"
    if [ "$kind" = local ]; then
      sect fio "path=$kind test=randread" "$fio" --name=randread --rw=randread --bs=4k "${common[@]}"
    else
      local meta=(--name=meta --directory="$dir/meta" --nrfiles="$nfiles" --filesize=4k --bs=4k --openfiles=1
                  --output-format=json)
      mkdir -p "$dir/meta"
      sect fio "path=$kind test=create" "$fio" --ioengine=filecreate --create_on_open=1 "${meta[@]}"
      sect fio "path=$kind test=stat" "$fio" --ioengine=filestat "${meta[@]}"
      sect fio "path=$kind test=unlink" "$fio" --ioengine=filedelete "${meta[@]}"
    fi
  else
    local of= if=
    [ "$direct" = 1 ] && { of=oflag=direct; if=iflag=direct; }
    merged dd "path=$kind test=seqwrite" dd if=/dev/zero of="$dir/dd.bin" bs=1M count="$ddmib" $of conv=fsync
    merged dd "path=$kind test=seqread" dd if="$dir/dd.bin" of=/dev/null bs=1M $if
    [ "$kind" = shared ] && sect meta "path=$kind" meta_loop "$dir/meta" "$nfiles"
  fi
  rm -rf -- "$dir"
}
[ -n "$local_path" ] && measure local "$local_path"
[ -n "$shared_path" ] && measure shared "$shared_path"
echo "@@begin done"; echo "@@end rc=0"
'''

_SIZE = re.compile(r"^([0-9]+)([KMGT]?)i?B?$", re.I)
_SCALE = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# Filesystems by what they are to a training job.
PARALLEL_FS = frozenset({"lustre", "gpfs", "beegfs", "wekafs", "ceph", "fuse.ceph-fuse", "glusterfs",
                         "fuse.glusterfs", "panfs", "pvfs2", "orangefs", "fuse.dfuse", "daos"})
NFS = frozenset({"nfs", "nfs4"})
NETWORK_FS = PARALLEL_FS | NFS | frozenset({"cifs", "smb3", "fuse.sshfs", "9p", "virtiofs"})
LOCAL_FS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "f2fs", "tmpfs", "overlay", "bcachefs"})


def size_bytes(text: str) -> int:
    """``4G`` -> 4 GiB (fio's sizes are binary). Raises UsageError naming the value."""
    m = _SIZE.match(str(text).strip())
    if not m or int(m.group(1)) <= 0:
        raise UsageError(f"bad storage size {text!r}: expected e.g. 512M, 4G")
    return int(m.group(1)) * _SCALE[m.group(2).upper()]


@dataclass(frozen=True)
class StorageParams:
    local: str
    shared: str
    fio: str
    size: str
    runtime: int
    block_size: str
    iodepth: int
    numjobs: int
    ioengine: str
    direct: bool
    meta_files: int

    def args(self) -> list[str]:
        for name in ("runtime", "iodepth", "numjobs", "meta_files"):
            if int(getattr(self, name)) < 1:
                raise UsageError(f"bad storage {name} {getattr(self, name)!r}: must be >= 1")
        dd_mib = max(1, size_bytes(self.size) * self.numjobs >> 20)
        size_bytes(self.block_size)
        return [self.local, self.shared, self.fio, self.size, str(self.runtime), self.block_size,
                str(self.iodepth), str(self.numjobs), self.ioengine, "1" if self.direct else "0",
                str(self.meta_files), str(dd_mib)]


def build_script(params: StorageParams, place: Placement, output: str, time_limit: str, exclusive: bool) -> str:
    """The sbatch script. Raises UsageError for a value that cannot go into it."""
    for what, path in (("--local", params.local), ("--shared", params.shared)):
        if path and not path.startswith("/"):
            raise UsageError(f"bad {what} {path!r}: give an absolute path")
        if ":" in path:  # fio reads --directory=a:b as two directories
            raise UsageError(f"bad {what} {path!r}: fio cannot take a path with ':'")
    if not params.local and not params.shared:
        raise UsageError("nothing to measure: give --local PATH and/or --shared PATH")
    lines = header("cockpit-storage", place, output, time_limit, exclusive)
    lines.append(srun_line(NODE_SCRIPT, params.args()))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- figures


@dataclass
class PathFigures:
    kind: str  # local or shared
    fstype: str | None = None
    source: str | None = None
    target: str | None = None
    raid_level: str | None = None
    raid_disks: int | None = None
    seqwrite: float | None = None  # bytes/s
    seqread: float | None = None
    randread_iops: float | None = None
    meta: dict[str, float] = field(default_factory=dict)  # create/stat/unlink ops/s
    problems: list[str] = field(default_factory=list)  # why a figure is missing
    fs_asked: bool = False  # the output holds a filesystem reading (a bare fio JSON has none)

    def to_dict(self) -> dict:
        return {"fstype": self.fstype, "source": self.source, "target": self.target, "raid_level": self.raid_level,
                "raid_disks": self.raid_disks, "seqwrite_bytes_per_s": self.seqwrite,
                "seqread_bytes_per_s": self.seqread, "randread_iops": self.randread_iops,
                "meta_ops_per_s": dict(self.meta), "problems": list(self.problems)}


@dataclass
class NodeFigures:
    node: str
    tool: str  # fio or dd
    paths: dict[str, PathFigures] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def _fs(fig: PathFigures, out: NodeOutput) -> None:
    fig.fs_asked = bool(out.find("fstype", path=fig.kind) or out.find("statfs", path=fig.kind))
    for sec in out.find("fstype", path=fig.kind):
        words = sec.text.split()
        if sec.rc == 0 and len(words) >= 2:
            fig.fstype, fig.source = words[0], words[1]
            fig.target = words[2] if len(words) > 2 else None
    if fig.fstype is None:
        for sec in out.find("statfs", path=fig.kind):
            if sec.rc == 0 and sec.text.strip():
                fig.fstype = sec.text.strip().split()[0]
    for sec in out.find("raid", path=fig.kind):
        words = sec.text.split()
        if sec.rc == 0 and words:
            fig.raid_level = words[0]
            fig.raid_disks = int(words[1]) if len(words) > 1 and words[1].isdecimal() else None


def _stderr(out: NodeOutput, kind: str, test: str) -> str:
    secs = out.find("stderr", path=kind, test=test)
    return secs[0].lines[0].strip() if secs and secs[0].lines else ""


def _measure(fig: PathFigures, out: NodeOutput, source: str) -> None:
    for sec in out.sections:
        if sec.attrs.get("path") != fig.kind or sec.kind not in ("fio", "dd", "meta"):
            continue
        test = sec.attrs.get("test", "meta")
        where = f"{source}: {out.node} {fig.kind} {test}"
        try:
            if sec.rc is None:
                raise ParseError(where, "the task ended inside this test")
            if sec.kind == "meta":
                if sec.rc != 0:
                    raise ParseError(where, f"the metadata loop failed (exit {sec.rc})")
                fig.meta.update(parse_meta_loop(sec.text, where))
                continue
            if sec.kind == "dd":
                if sec.rc != 0:
                    raise ParseError(where, f"dd failed (exit {sec.rc}): {(sec.lines or ['no output'])[-1].strip()}")
                value = parse_dd(sec.text, where).bandwidth
            else:
                run = parse_fio_json(sec.text, where)
                if sec.rc != 0 or run.error:
                    why = _stderr(out, fig.kind, test) or f"exit {sec.rc}, job error {run.error}"
                    raise ParseError(where, f"fio failed: {why}")
                if run.jobs[0].ioengine in META_ENGINES:
                    fig.meta[test] = run.iops
                    continue
                value = run.iops if test == "randread" else run.bandwidth
            setattr(fig, "randread_iops" if test == "randread" else test, value)
        except CockpitError as exc:
            fig.problems.append(str(exc) if sec.rc is None or sec.rc == 0 else
                                f"{where}: {_stderr(out, fig.kind, test) or exc}")


def figures(text: str, source: str) -> dict[str, NodeFigures]:
    """Per-node figures from the job output. Raises ParseError when no node reported."""
    out = {}
    for node, raw in parse_job_output(text, "storage", source).items():
        nf = NodeFigures(node, raw.attrs.get("tool", "fio"),
                         errors=[e for e in raw.errors if not e.startswith("path=")])
        path_errors = [e.partition(" ") for e in raw.errors if e.startswith("path=")]
        kinds = sorted({s.attrs["path"] for s in raw.sections if "path" in s.attrs}
                       | {head.removeprefix("path=") for head, _, _ in path_errors})
        for kind in kinds:
            fig = PathFigures(kind)
            _fs(fig, raw)
            _measure(fig, raw, source)
            fig.problems += [f"{node} {kind}: {msg}" for head, _, msg in path_errors if head == f"path={kind}"]
            nf.paths[kind] = fig
        if not raw.find("done"):
            nf.errors.append("the task did not finish (no end marker): figures may be missing")
        out[node] = nf
    return out
