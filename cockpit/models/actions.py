"""The catalogue of operator actions: what each one is and how its argv is built.

Pure data and argv builders, no I/O: the gate (:mod:`cockpit.core.actions`)
plans, confirms, audits and executes; the backends' executors run one
:class:`Step` and return a :class:`TargetResult`.

Values from the user or the cluster are passed as single argv elements
(``Reason=`` + the reason exactly as typed): no shell ever sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# Templates for the common reasons an operator drains a node (key -> label).
REASON_TEMPLATES: dict[str, str] = {
    "xid79": "Xid 79: GPU fallen off the bus",
    "xid": "GPU Xid error",
    "ecc": "ECC: uncorrectable GPU memory errors",
    "thermal": "thermal: GPU or node overheating",
    "ib": "IB link: InfiniBand port down or degraded",
    "pcie": "PCIe: link degraded",
    "maint": "maintenance",
}

SIGNALS = ("USR1", "USR2", "TERM", "KILL", "INT", "HUP", "CONT", "STOP", "QUIT", "ABRT")

@dataclass(frozen=True, slots=True)
class Params:
    """Everything an action may take besides its targets."""

    reason: str | None = None  # drain / down / reboot
    signal: str | None = None  # signal
    full: bool = False  # signal: also the batch shell and its children (scancel --full)
    batch: bool = False  # signal: only the batch shell (scancel --batch)
    time_limit: str | None = None  # timelimit, Slurm's own syntax
    nice: int | None = None  # nice
    nextstate: str = "resume"  # reboot: resume or down

    def to_dict(self) -> dict[str, Any]:
        """The values that differ from the defaults (0 and "" included when given)."""
        default = Params()
        return {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) != getattr(default, k)}


@dataclass(frozen=True)
class ActionSpec:
    """One action: how to build its argv for a target, and what it needs."""

    name: str
    kind: str  # "job", "node", or "batch" (a new job: its target names where it will run)
    title: str  # shown in dialogs and help
    build: Callable[[str, Params], list[str]]
    dangerous: bool = True
    needs_reason: bool = False
    demo_method: str = ""  # method of the demo backend doing the same thing


# scancel exits 0 and prints nothing for an unknown or finished job unless it is
# verbose (seen on 22.05): --verbose makes Slurm say why, in its own words.
def _scancel(job: str, _p: Params) -> list[str]:
    return ["scancel", "--verbose", "--", job]


def _scancel_signal(job: str, p: Params) -> list[str]:
    argv = ["scancel", "--verbose", f"--signal={p.signal}"]
    if p.full:
        argv.append("--full")
    if p.batch:
        argv.append("--batch")
    return [*argv, "--", job]


def _node_update(state: str, with_reason: bool):
    def build(node: str, p: Params) -> list[str]:
        argv = ["scontrol", "update", f"NodeName={node}", f"State={state}"]
        return [*argv, f"Reason={p.reason}"] if with_reason else argv

    return build


def _job_cmd(*words: str):
    return lambda job, _p: ["scontrol", *words, job]


_SPECS = (
    ActionSpec("cancel", "job", "Cancel job", _scancel, demo_method="cancel_job"),
    ActionSpec("signal", "job", "Send a signal to job", _scancel_signal, demo_method="signal_job"),
    ActionSpec("requeue", "job", "Requeue job", _job_cmd("requeue"), demo_method="requeue_job"),
    ActionSpec("requeuehold", "job", "Requeue and hold job", _job_cmd("requeuehold"), demo_method="requeue_hold_job"),
    ActionSpec("hold", "job", "Hold job", _job_cmd("hold"), demo_method="hold_job"),
    ActionSpec("release", "job", "Release job", _job_cmd("release"), dangerous=False, demo_method="release_job"),
    ActionSpec(
        "timelimit", "job", "Change time limit",
        lambda j, p: ["scontrol", "update", f"JobId={j}", f"TimeLimit={p.time_limit}"],
        demo_method="set_time_limit",
    ),
    ActionSpec("top", "job", "Move job to the top of its user's queue", _job_cmd("top"), dangerous=False, demo_method="top_job"),
    ActionSpec(
        "nice", "job", "Change job nice value",
        lambda j, p: ["scontrol", "update", f"JobId={j}", f"Nice={p.nice}"],
        dangerous=False, demo_method="nice_job",
    ),
    ActionSpec("drain", "node", "Drain node", _node_update("DRAIN", True), needs_reason=True, demo_method="drain_node"),
    ActionSpec("resume", "node", "Resume node", _node_update("RESUME", False), demo_method="resume_node"),
    ActionSpec("down", "node", "Set node down", _node_update("DOWN", True), needs_reason=True, demo_method="set_node_down"),
    ActionSpec(
        "reboot", "node", "Reboot node when idle (ASAP)",
        lambda n, p: ["scontrol", "reboot", "ASAP", f"nextstate={p.nextstate}", f"reason={p.reason}", n],
        needs_reason=True, demo_method="reboot_node",
    ),
    ActionSpec("undrain", "node", "Undrain node", _node_update("UNDRAIN", False), demo_method="undrain_node"),
    # The script goes to sbatch on stdin (Step.stdin); the gate shows it before it runs.
    ActionSpec("submit", "batch", "Submit a batch job", lambda _t, _p: ["sbatch", "--parsable"],
               demo_method="submit_batch"),
)
ACTIONS: dict[str, ActionSpec] = {s.name: s for s in _SPECS}
JOB_ACTIONS = tuple(s.name for s in _SPECS if s.kind == "job")
NODE_ACTIONS = tuple(s.name for s in _SPECS if s.kind == "node")


@dataclass(frozen=True, slots=True)
class Step:
    target: str
    argv: tuple[str, ...]
    stdin: str | None = None  # e.g. the batch script handed to ``sbatch --parsable``


@dataclass(frozen=True, slots=True)
class TargetResult:
    target: str
    argv: tuple[str, ...]
    status: str  # "done", "failed", "unknown" (no evidence either way), "dry-run"
    detail: str = ""  # Slurm's own words (stderr verbatim) or why it failed
    returncode: int | None = None
    value: str = ""  # what the step produced that callers need (a submitted job's id)

    @property
    def ok(self) -> bool:
        return self.status in ("done", "dry-run")

    @property
    def unknown(self) -> bool:
        """The command may or may not have taken effect (the controller stopped answering)."""
        return self.status == "unknown"

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "argv": list(self.argv), "status": self.status,
                "ok": self.ok, "returncode": self.returncode, "detail": self.detail,
                **({"value": self.value} if self.value else {})}




# Programs that change cluster or node state, or run other programs given to them.
# A read-only probe (nvidia-smi, dmesg, py-spy dump, cat ...) never runs them; state
# changes go through the gate as actions.
_ALWAYS_MUTATING = frozenset({
    "sbatch", "salloc", "srun", "scancel", "strigger", "scrontab", "kill", "pkill", "killall",
    "reboot", "shutdown", "poweroff", "halt", "rm", "mv", "dd", "mkfs", "modprobe", "rmmod",
    "insmod", "tee", "cp", "chmod", "chown", "mkdir", "touch", "ln", "xargs", "perl", "ruby", "node",
    "nsenter", "chroot", "ssh", "scp", "rsync", "curl", "wget", "systemd-run", "at", "crontab",
    "truncate", "install", "awk", "gawk", "mount", "umount",
})
# ip and ethtool read by default; these words make them write.
_IP_WRITES = frozenset({"add", "del", "delete", "set", "change", "replace", "flush", "append", "prepend", "up", "down"})
_ETHTOOL_READS = frozenset({"-i", "--driver", "-S", "--statistics", "-m", "--module-info", "-T", "--show-time-stamping",
                            "-k", "--show-features", "-g", "--show-ring", "-a", "--show-pause", "-P", "--show-permaddr"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh"})
# Sub-commands that only read, for programs that can also write.
_READ_SUBCOMMANDS = {
    "scontrol": frozenset({"show", "listpids", "ping", "version", "-o", "--oneliner", "-d", "--details"}),
    "sacctmgr": frozenset({"show", "list", "-n", "-P", "--parsable2", "--noheader"}),
    "systemctl": frozenset({"status", "is-active", "is-failed", "show", "list-units"}),
}
# nvidia-smi options that set state (reset, persistence, power, ECC, clocks, MIG, modes).
_NVSMI_SETTERS = frozenset({
    "-r", "--gpu-reset", "-pm", "--persistence-mode", "-pl", "--power-limit", "-e", "--ecc-config",
    "-p", "--reset-ecc-errors", "-c", "--compute-mode", "-ac", "--applications-clocks", "-rac",
    "--reset-applications-clocks", "-lgc", "--lock-gpu-clocks", "-rgc", "--reset-gpu-clocks",
    "-lmc", "--lock-memory-clocks", "-rmc", "--reset-memory-clocks", "-mig", "--multi-instance-gpu",
    "-am", "--accounting-mode", "-caa", "--clear-accounted-apps", "-dm", "--driver-model",
})
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprintf", "-fls"})

# The one way a probe may use a shell: a fixed script, with no cluster data in it,
# that only reads. Every port file of every InfiniBand HCA as path<TAB>value.
IB_SYSFS_DUMP = (
    'for f in /sys/class/infiniband/*/ports/*/state /sys/class/infiniband/*/ports/*/phys_state '
    '/sys/class/infiniband/*/ports/*/rate /sys/class/infiniband/*/ports/*/link_layer '
    '/sys/class/infiniband/*/ports/*/counters/* /sys/class/infiniband/*/ports/*/hw_counters/*; '
    'do [ -f "$f" ] && printf "%s\\t%s\\n" "$f" "$(cat "$f" 2>/dev/null)"; done; true'
)
READ_ONLY_SCRIPTS = frozenset({IB_SYSFS_DUMP})


def mutating_reason(argv: Sequence[str]) -> str | None:
    """Why ``argv`` would change state (one line), or None for a read-only command.

    Leading ``env NAME=VALUE``, ``timeout N`` and ``sudo`` are looked through.
    ``scontrol write batch_script ID -`` (the script to stdout) reads only."""
    words = [str(a) for a in argv]
    while words:
        head = words[0].rsplit("/", 1)[-1]
        if head == "env":
            words = words[1:]
            while words and "=" in words[0] and not words[0].startswith("-"):
                words = words[1:]
        elif head == "timeout" and len(words) > 1:
            words = words[2:]
        elif head == "sudo":
            words = words[1:]
        else:
            break
    if not words:
        return None
    prog, rest = words[0].rsplit("/", 1)[-1], words[1:]
    if prog in _ALWAYS_MUTATING or prog.startswith("python"):
        return f"{prog} changes state or runs other programs"
    if prog in _SHELLS:
        if rest[:1] == ["-c"] and len(rest) >= 2 and rest[1] in READ_ONLY_SCRIPTS:
            return None
        return f"{prog} runs a script that is not one of cockpit's read-only scripts"
    if prog == "sed" and any(w.startswith(("-i", "--in-place")) for w in rest):
        return "sed -i changes files"
    if prog == "ip" and _IP_WRITES & set(rest):
        return f"ip {sorted(_IP_WRITES & set(rest))[0]} changes the network"
    if prog == "ethtool" and any(w.startswith("-") and w not in _ETHTOOL_READS for w in rest):
        return "ethtool with a setting option changes the NIC"
    if prog == "find" and _FIND_ACTIONS & set(rest):
        return f"find {sorted(_FIND_ACTIONS & set(rest))[0]} runs or changes things"
    if prog == "scontrol" and rest[:2] == ["write", "batch_script"] and rest[-1:] == ["-"]:
        return None
    if prog in _READ_SUBCOMMANDS:
        first = next((w for w in rest if not w.startswith("-")), "")
        if first.lower() not in _READ_SUBCOMMANDS[prog]:
            return f"{prog} {first or '(no sub-command)'} changes state"
        return None
    if prog == "nvidia-smi":
        bad = next((w for w in rest if w.split("=", 1)[0] in _NVSMI_SETTERS), None)
        return f"nvidia-smi {bad} changes GPU state" if bad else None
    return None


@dataclass(frozen=True, slots=True)
class ProbeOutput:
    """One node's answer to a read-only probe: its stdout, or why there is none."""

    node: str
    ok: bool
    text: str
    error: str = ""
