"""What a simulated node answers to the read-only commands cockpit sends.

The commands (found where cockpit builds them): nvidia-smi's telemetry and
compute-apps queries (cockpit/telemetry, cockpit/core/jobprocs.py),
``scontrol listpids`` and ``ps`` (jobprocs), ``stat``/``tail``/``cat`` of a job's
output (cockpit/remote/filetail.py, the runbooks), ``py-spy dump`` and
``/proc/PID/environ`` (the hung-job runbook), ``scontrol write batch_script``,
the kernel log (dmesg, journalctl -k), the InfiniBand sysfs dump, the
pre-flight fabric check's ``find -L``/``grep -H -s .`` of /sys/class/infiniband
and /sys/class/net and ``ibstat`` (_demo/fabric.py), and what ``d`` and ``L``
ask: ``scontrol show job|node|config`` (_demo/describe.py) and the ``tail`` of
slurmctld's and slurmd's logs (_demo/slurmlogs.py). Node ``""`` is the host
where Slurm's commands run, the controller: it sees the shared filesystem,
Slurm and slurmctld's log, not the nodes' processes or GPUs.

Anything else is answered as a failure that says it is not simulated (exit
127, as a shell says for a missing program): the demo never runs a program.
"""

from __future__ import annotations

import time as _time
from typing import Any

from cockpit.backends._demo import describe, fabric, files, gpus, kernel, procs, slurmlogs
from cockpit.hostlist import expand
from cockpit.runner import CommandResult

Answer = tuple[int, bytes, bytes]


def not_simulated(argv: list[str]) -> CommandResult:
    return CommandResult(tuple(argv), 127, b"", f"demo: {argv[0] if argv else '(empty)'}: not simulated\n".encode())


class NodeAnswers:
    """The answers of the demo's nodes, from the backend's current state (never advanced here)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    @property
    def sc(self) -> Any:
        return self.backend._sc

    def now(self) -> int:
        return int(self.backend.clock())

    def answer(self, node: str, argv: list[str]) -> CommandResult:
        """``argv``'s result on ``node`` ("" = the Slurm host)."""
        words = list(argv)
        if words[:1] == ["env"]:  # env NAME=VALUE ... PROGRAM: the variables change nothing here
            words = words[1:]
            while words and "=" in words[0] and not words[0].startswith("-"):
                words = words[1:]
        prog = words[0].rsplit("/", 1)[-1] if words else ""
        if node and node not in self.sc.sim.nodes:
            return CommandResult(tuple(argv), 255, b"", f"ssh: Could not resolve hostname {node}: Name or service not known\n".encode())
        handler = _HANDLERS.get(prog)
        got = handler(self, node, words[1:]) if handler is not None else None
        if got is None:
            return not_simulated(list(argv))
        rc, out, err = got
        return CommandResult(tuple(argv), rc, out, err)

    # -- processes and GPUs ------------------------------------------------
    def procs(self, node: str) -> list[procs.Proc]:
        if not node:
            return []
        return procs.node_procs(self.sc, node, self.now(), self.backend._batch.running_on(node))

    def _proc(self, node: str, pid: int) -> procs.Proc | None:
        return next((p for p in self.procs(node) if p.pid == pid), None)

    def nvidia_smi(self, node: str, args: list[str]) -> Answer | None:
        if not node:
            return None  # the Slurm host has no GPUs to ask
        pids = {p.pid: p.gpu for p in self.procs(node) if p.gpu is not None}
        return gpus.nvidia_smi(self.backend, node, args, pids)

    def scontrol(self, node: str, args: list[str]) -> Answer | None:
        if len(args) == 2 and args[0] == "listpids" and args[1].isdecimal():
            return procs.listpids(self.procs(node), int(args[1]))
        if len(args) == 4 and args[:2] == ["write", "batch_script"] and args[3] == "-":
            job = self.sc.sim.jobs.get(int(args[2])) if args[2].isdecimal() else None
            if job is None:
                return 1, b"", b"scontrol: error: Invalid job id specified\n"
            text = files.batch_script(self.sc, job)
            if text is None:
                return 1, b"", f"scontrol: error: job {job.job_id} has no batch script\n".encode()
            return 0, text.encode(), b""
        if len(args) == 3 and args[:2] == ["show", "hostnames"]:
            return 0, "".join(f"{n}\n" for n in expand(args[2])).encode(), b""
        return describe.scontrol_show(self.sc, args, self.now())

    def ps(self, node: str, args: list[str]) -> Answer | None:
        if len(args) != 4 or args[0] != "-o" or args[2] != "-p" or args[1] != "pid=,stat=,etimes=,args=":
            return None
        pids = [int(p) for p in args[3].split(",") if p.isdecimal()]
        return procs.ps(self.procs(node), pids, self.now())

    def py_spy(self, node: str, args: list[str]) -> Answer | None:
        if len(args) != 3 or args[0] != "dump" or args[1] not in ("--pid", "-p") or not args[2].isdecimal():
            return None
        return procs.pyspy_dump(self.sc, self._proc(node, int(args[2])), int(args[2]))

    # -- files ---------------------------------------------------------------
    def _file(self, node: str, path: str) -> files.DemoFile | None:
        """A file on ``node``: the shared filesystem's, or a Slurm daemon's log of that host."""
        if path.startswith("/var/log/slurm/"):
            return slurmlogs.log_file(self.sc, node, path, self.now())
        return self.backend._files.get(path)

    def _read(self, node: str, path: str) -> bytes | None:
        if path.startswith("/proc/"):
            parts = path.split("/")
            if len(parts) == 4 and parts[2].isdecimal() and parts[3] == "environ":
                proc = self._proc(node, int(parts[2]))
                return None if proc is None else procs.environ(self.sc, node, proc)
            return None
        f = self._file(node, path)
        return None if f is None else f.data

    def cat(self, node: str, args: list[str]) -> Answer | None:
        paths = [a for a in args if a != "--"]
        if not paths or any(a.startswith("-") for a in paths):
            return None
        out, err, rc = b"", b"", 0
        for p in paths:
            data = self._read(node, p)
            if data is None:
                err, rc = err + f"cat: {p}: No such file or directory\n".encode(), 1
            else:
                out += data
        return rc, out, err

    def stat(self, node: str, args: list[str]) -> Answer | None:
        fmt, paths, i = None, [], 0
        while i < len(args):
            a = args[i]
            if a in ("-L", "--dereference"):
                pass
            elif a in ("-c", "--format") and i + 1 < len(args):
                fmt, i = args[i + 1], i + 1
            elif a.startswith("--format="):
                fmt = a.split("=", 1)[1]
            elif a == "--":
                paths += args[i + 1:]
                break
            elif a.startswith("-"):
                return None
            else:
                paths.append(a)
            i += 1
        if fmt is None or not paths:
            return None
        out, err, rc = [], b"", 0
        for p in paths:
            f = None if p.startswith("/proc/") else self._file(node, p)
            if f is None:
                err, rc = err + f"stat: cannot statx '{p}': No such file or directory\n".encode(), 1
                continue
            values = {"%s": str(len(f.data)), "%i": str(f.inode), "%Y": str(f.mtime), "%n": p, "%%": "%"}
            line = fmt
            for key, val in values.items():
                line = line.replace(key, val)
            out.append(line)
        return rc, ("\n".join(out) + "\n").encode() if out else b"", err

    def tail(self, node: str, args: list[str]) -> Answer | None:
        words = [a for a in args if a != "--"]
        if len(words) != 3 or words[0] not in ("-c", "-n"):
            return None
        mode, count, path = words
        start = count.startswith("+")
        if not count.lstrip("+").isdecimal():
            return 1, b"", f"tail: invalid number of {'bytes' if mode == '-c' else 'lines'}: '{count}'\n".encode()
        n = int(count.lstrip("+"))
        data = self._read(node, path)
        if data is None:
            return 1, b"", f"tail: cannot open '{path}' for reading: No such file or directory\n".encode()
        if mode == "-c":
            return 0, data[max(n - 1, 0):] if start else data[max(len(data) - n, 0):] if n else b"", b""
        lines = data.splitlines(keepends=True)
        return 0, b"".join(lines[max(n - 1, 0):] if start else lines[max(len(lines) - n, 0):] if n else []), b""

    # -- kernel, fabric, odds and ends -------------------------------------
    def dmesg(self, node: str, args: list[str]) -> Answer | None:
        return kernel.dmesg(self.backend, node, args) if node else None

    def journalctl(self, node: str, args: list[str]) -> Answer | None:
        return kernel.journalctl(self.backend, node, args) if node else None

    def sh(self, node: str, args: list[str]) -> Answer | None:
        return kernel.ib_dump(self.backend, node) if node and kernel.is_ib_dump(args) else None

    def find(self, node: str, args: list[str]) -> Answer | None:
        return fabric.find(self.sc, node, args) if node else None

    def grep(self, node: str, args: list[str]) -> Answer | None:
        return fabric.grep(self.sc, node, args) if node else None

    def ibstat(self, node: str, args: list[str]) -> Answer | None:
        return fabric.ibstat(self.sc, node) if node and not args else None

    def hostname(self, node: str, args: list[str]) -> Answer | None:
        return (0, f"{node or 'slurm-login'}\n".encode(), b"") if not args else None

    def uptime(self, node: str, args: list[str]) -> Answer | None:
        if args or not node:
            return None
        now = self.now()
        up = max(0, now - self.sc.sim.nodes[node].boot_time)
        busy = sum(1 for o in self.sc.sim.nodes[node].owners if o is not None)
        text = (f" {_time.strftime('%H:%M:%S', _time.gmtime(now))} up {up // 86_400} days, "
                f"{up % 86_400 // 3600:2d}:{up % 3600 // 60:02d},  0 users,  load average: "
                f"{busy * 1.01:.2f}, {busy * 0.99:.2f}, {busy * 0.97:.2f}\n")
        return 0, text.encode(), b""


_HANDLERS = {
    "nvidia-smi": NodeAnswers.nvidia_smi, "scontrol": NodeAnswers.scontrol, "ps": NodeAnswers.ps,
    "py-spy": NodeAnswers.py_spy, "cat": NodeAnswers.cat, "stat": NodeAnswers.stat, "tail": NodeAnswers.tail,
    "dmesg": NodeAnswers.dmesg, "journalctl": NodeAnswers.journalctl, "sh": NodeAnswers.sh,
    "hostname": NodeAnswers.hostname, "uptime": NodeAnswers.uptime, "find": NodeAnswers.find,
    "grep": NodeAnswers.grep, "ibstat": NodeAnswers.ibstat,
}
