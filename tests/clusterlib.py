"""Helpers for tests that use the real Slurm test cluster (tests/cluster/up).

The cluster is shared by every test run on this machine: tests submit jobs with distinctive
names, cancel them, and resume nodes they drain. Nothing here starts or stops daemons.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence, TypeVar

import pytest

RUN_DIR = Path(os.environ.get("COCKPIT_CLUSTER_RUN", "/run/cockpit-cluster"))
ENV_FILE = RUN_DIR / "env.sh"
_EXPORT = re.compile(r"^export ([A-Z_][A-Z0-9_]*)=(.*)$")

T = TypeVar("T")


def cluster_env(env_file: Path = ENV_FILE) -> dict[str, str] | None:
    """Return the variables exported by the cluster's env.sh, or None when it is not up.

    Raises nothing: an unreadable file counts as "not up".
    """
    try:
        text = env_file.read_text()
    except OSError:
        return None
    env: dict[str, str] = {}
    for line in text.splitlines():
        m = _EXPORT.match(line.strip())
        if m:
            values = shlex.split(m.group(2))
            env[m.group(1)] = values[0] if values else ""
    return env or None


def _controller_answers(env: Mapping[str, str]) -> str | None:
    """Return None when slurmctld answers a ping, else why not."""
    try:
        res = run(["scontrol", "ping"], env=env, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"scontrol ping failed: {exc}"
    if "is UP" not in res.stdout:
        return f"slurmctld does not answer: {(res.stdout + res.stderr).strip()}"
    return None


def require_cluster() -> dict[str, str]:
    """Return the cluster env, or skip the calling test with a clear reason.

    Raises pytest's Skipped when the cluster is not up or slurmctld does not answer.
    """
    env = cluster_env()
    if env is None:
        pytest.skip(f"Slurm test cluster is not up ({ENV_FILE} missing): run tests/cluster/up as root")
    why = _controller_answers(env)
    if why:
        pytest.skip(f"Slurm test cluster is not usable: {why}; run tests/cluster/up as root")
    return env


def _full_env(env: Mapping[str, str] | None) -> dict[str, str]:
    merged = dict(os.environ)
    merged.update(env if env is not None else (cluster_env() or {}))
    return merged


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    timeout: float = 60,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run argv (never a shell) with the cluster's SLURM_CONF and friends set.

    Raises subprocess.CalledProcessError when check is true and the command fails,
    subprocess.TimeoutExpired after timeout seconds, OSError when argv[0] is missing.
    """
    return subprocess.run(
        list(argv), env=_full_env(env), capture_output=True, text=True,
        check=check, timeout=timeout, input=input,
    )


def wait_for(predicate: Callable[[], T], timeout: float = 30, interval: float = 0.2) -> T:
    """Poll predicate until it returns a truthy value and return that value.

    Raises TimeoutError (naming the predicate) when timeout seconds pass first.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            name = getattr(predicate, "__name__", repr(predicate))
            raise TimeoutError(f"condition {name} not met within {timeout} s")
        time.sleep(interval)


def stop_process(proc: subprocess.Popen) -> None:
    """Stop a daemon a test started itself (its own slurmrestd), by its PID: TERM, then KILL."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _opt(key: str, value: object) -> list[str]:
    flag = "--" + key.replace("_", "-")
    if value is True:
        return [flag]
    if value is False or value is None:
        return []
    return [f"{flag}={value}"]


def submit(script: str, **sbatch_opts: object) -> str:
    """Submit a batch script via sbatch --parsable and return the job id (as a string).

    Keyword options become sbatch flags: job_name="x" -> --job-name=x, hold=True -> --hold.
    A script without a shebang gets "#!/bin/bash". Raises CalledProcessError if sbatch fails.
    """
    if not script.startswith("#!"):
        script = "#!/bin/bash\n" + script
    argv = ["sbatch", "--parsable"]
    for key, value in sbatch_opts.items():
        argv += _opt(key, value)
    opts = {k.replace("_", "-") for k in sbatch_opts}
    if "output" not in opts:
        argv.append("--output=/dev/null")
    out = run(argv, input=script).stdout.strip()
    # --parsable prints "jobid" or "jobid;cluster".
    return out.split(";", 1)[0]


def profile(env: Mapping[str, str] | None = None) -> str:
    """The running test cluster's profile: "default" (four alike typed-GPU nodes) or "site"
    (tests/cluster/lib-profile.sh: untyped, two-type and shard GPUs, a CPU-only node03)."""
    return (env if env is not None else (cluster_env() or {})).get("COCKPIT_TEST_PROFILE") or "default"


def gpu_gres(count: int, env: Mapping[str, str] | None = None) -> str:
    """The ``--gres`` that asks for ``count`` GPUs on each node, as the running profile allows.

    Default profile: typed (``gpu:h100:N``), as its nodes are configured. Site profile: untyped
    (``gpu:N``), which Slurm fills from any type: node01's untyped 8, node02's a100 and MIG
    slices, node04's four h100; a typed request would fit node04 alone.
    """
    env = env if env is not None else (cluster_env() or {})
    if profile(env) == "site":
        return f"gpu:{count}"
    return f"gpu:{env.get('COCKPIT_TEST_GPU_TYPE', 'h100')}:{count}"


def gpu_type(env: Mapping[str, str] | None = None) -> str | None:
    """The GPU type a job given ``gpu_gres`` is allocated, when the profile fixes it (default:
    the one type; site: None, since an untyped request may get any of the types there)."""
    env = env if env is not None else (cluster_env() or {})
    return None if profile(env) == "site" else env.get("COCKPIT_TEST_GPU_TYPE", "h100")


# What tests/cluster/lib-profile.sh configures (site) beside slurm.conf.in's four alike nodes.
_SITE_GPUS = {"node01": 8, "node02": 4, "node03": 0, "node04": 4}  # whole GPUs (node02's MIG slices apart)
_PARTITION_NODES = {"default": {"debug": ("node01", "node02")},
                    "site": {"debug": ("node01", "node02", "node03"), "urgent": ("node04",)}}


def gpus_of(node: str, env: Mapping[str, str] | None = None) -> int:
    """How many whole GPUs ``node`` is configured with in the running profile."""
    env = env if env is not None else (cluster_env() or {})
    if profile(env) == "site":
        return _SITE_GPUS.get(node, 8)  # node05+: untyped gpu:8, as node01
    return int(env.get("COCKPIT_TEST_GPUS_PER_NODE", "8"))


def partition_nodes(name: str, env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The nodes of partition ``name`` (not gpu: that is every node) in the running profile."""
    return _PARTITION_NODES[profile(env)][name]


def require_profile(name: str, why: str) -> None:
    """Skip the calling test where the running cluster is not profile ``name``, saying why."""
    if profile() != name:
        pytest.skip(f"needs the {name} test-cluster profile, this one is {profile()}: {why}")


def cancel(job_id: str | int, wait: bool = True) -> None:
    """Cancel a job (ignoring "already finished") and, by default, wait until it left RUNNING.

    Raises TimeoutError if the job is still running or completing after 30 s.
    """
    run(["scancel", str(job_id)], check=False)
    if not wait:
        return

    def gone() -> bool:
        res = run(["squeue", "-h", "-j", str(job_id), "-t", "PD,R,CG,S,CF", "-o", "%i"], check=False)
        return res.stdout.strip() == ""

    wait_for(gone, timeout=30)


_KV = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/.\[\]-]*)=")


def parse_scontrol(text: str) -> dict[str, str]:
    """Parse one `scontrol show` record into {key: value}.

    Values may contain spaces (Reason=..., Command=...): a value runs until the next
    "Key=" token. Only the first record is read when several are given.
    """
    record = text.strip().split("\n\n", 1)[0]
    flat = " ".join(line.strip() for line in record.splitlines())
    marks = list(_KV.finditer(flat))
    result: dict[str, str] = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(flat)
        result.setdefault(m.group(1), flat[m.end():end].strip())
    return result


def scontrol_show(kind: str, name: str | int, detail: bool = False) -> dict[str, str]:
    """Return `scontrol [-d] show KIND NAME` as a dict of key=value.

    Raises CalledProcessError when scontrol fails (unknown job or node, controller down).
    """
    argv = ["scontrol"] + (["-d"] if detail else []) + ["show", kind, str(name)]
    return parse_scontrol(run(argv).stdout)


def ssh_argv(env: Mapping[str, str], host: str, *command: str, user: str | None = None) -> list[str]:
    """Return an ssh argv that reaches HOST (head, node01...) with the cluster's key and config.

    The remote command is quoted with shlex.quote, so its words arrive as given.
    """
    argv = ["ssh", "-F", env["COCKPIT_TEST_SSH_CONFIG"]]
    if user:
        argv += ["-l", user]
    return argv + [host, "--"] + [shlex.quote(word) for word in command]


# --- A slow link to one node (tests/cluster/slowlink: tc htb + u32 on dev lo) -------------

SLOWLINK = Path(__file__).resolve().parent / "cluster" / "slowlink"


class SlowLinkError(RuntimeError):
    """tests/cluster/slowlink failed; the message carries its (tc's) error text."""


def node_addr(env: Mapping[str, str], node: str) -> str:
    """The loopback address of a test-cluster node: nodeNN -> $COCKPIT_TEST_NODE_NET.NN."""
    net = env.get("COCKPIT_TEST_NODE_NET", "127.0.10")
    return f"{net}.{int(node.removeprefix('node'))}"


def node_slurmd_pid(env: Mapping[str, str], node: str) -> int:
    """The pid of the node's slurmd (from up's pid file). Raises OSError when it is missing."""
    run_dir = Path(env.get("COCKPIT_TEST_CLUSTER_RUN", str(RUN_DIR)))
    return int((run_dir / "pids" / f"{node}.slurmd.pid").read_text().split()[0])


def _slowlink(*args: str) -> subprocess.CompletedProcess[str]:
    if not shutil.which("tc"):
        raise SlowLinkError("tc not found: install iproute2 (tests/run does)")
    try:
        res = subprocess.run([str(SLOWLINK), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SlowLinkError(f"slowlink {' '.join(args)}: {exc}") from exc
    if res.returncode != 0:
        raise SlowLinkError(f"slowlink {' '.join(args)} failed (rc {res.returncode}): "
                            f"{(res.stderr + res.stdout).strip()}")
    return res


def slowlink_on(addr: str, rate: str, pids: Sequence[int] = ()) -> None:
    """Rate-limit all loopback traffic from and to ADDR (127.0.0.0/8 only) to RATE, e.g. 80mbit,
    and everything that PIDS and their later children send on lo (see tests/cluster/slowlink:
    unbound client sockets leave from 127.0.0.1, so the address alone misses them).

    Raises SlowLinkError with tc's error text when it cannot (not root, no htb, a root qdisc
    on lo that is not ours). Pair every call with slowlink_off(), or use slow_link().
    """
    _slowlink("on", addr, rate, *(str(p) for p in pids))


def slowlink_off() -> None:
    """Remove the slow link (only what slowlink added). Raises SlowLinkError on failure."""
    _slowlink("off")


def slowlink_status() -> str:
    """'on', 'off' or 'foreign' (someone else's root qdisc on lo), then the tc rules and counters."""
    return _slowlink("status").stdout


def slow_class_bytes() -> int:
    """Bytes sent through the slow class so far (0 when the slow link is off)."""
    text = slowlink_status()
    m = re.search(r"class htb 1c0c:30 .*?\n\s*Sent (\d+) bytes", text)
    return int(m.group(1)) if m else 0


@contextmanager
def slow_link(addr: str, rate: str, pids: Sequence[int] = ()) -> Iterator[str]:
    """Context manager: the slow link on ADDR (and PIDS) at RATE for the block, always removed
    after it (also when the block fails). Yields ADDR."""
    slowlink_on(addr, rate, pids)
    try:
        yield addr
    finally:
        slowlink_off()


def slow_node(env: Mapping[str, str], node: str, rate: str) -> AbstractContextManager[str]:
    """slow_link for a whole test-cluster node, like a slow NIC: its address, and its slurmd
    (so every job task started there afterwards). Raises SlowLinkError / OSError."""
    return slow_link(node_addr(env, node), rate, [node_slurmd_pid(env, node)])


# --- A slow controller: its port rate-limited, or the daemon stopped (SIGSTOP) -------------

def slowport_on(addr: str, port: int | str, rate: str) -> None:
    """Rate-limit TCP to and from ADDR:PORT only (tests/cluster/slowlink port), e.g.
    slurmctld's 127.0.0.1:6817, while every other flow keeps its loopback speed.

    Raises SlowLinkError as slowlink_on does. Pair it with slowlink_off(), or use slow_port()."""
    _slowlink("port", addr, str(port), rate)


@contextmanager
def slow_port(addr: str, port: int | str, rate: str) -> Iterator[str]:
    """Context manager: ADDR:PORT at RATE for the block, always removed after it. Yields ADDR:PORT."""
    slowport_on(addr, port, rate)
    try:
        yield f"{addr}:{port}"
    finally:
        slowlink_off()


def daemon_pid(env: Mapping[str, str], host: str, daemon: str) -> int:
    """The pid of HOST's DAEMON (head/slurmctld, node03/slurmd, node03/sshd) from up's pid
    files. Raises OSError when the file is missing, ValueError when it holds no pid."""
    run_dir = Path(env.get("COCKPIT_TEST_CLUSTER_RUN", str(RUN_DIR)))
    return int((run_dir / "pids" / f"{host}.{daemon}.pid").read_text().split()[0])


def ctld_pid(env: Mapping[str, str]) -> int:
    """slurmctld's pid (head.slurmctld.pid). Raises OSError / ValueError as daemon_pid."""
    return daemon_pid(env, "head", "slurmctld")


def proc_state(pid: int) -> str:
    """The one-letter state of /proc/PID/stat (R, S, T for stopped ...), "" when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[0]


@contextmanager
def stopped(pid: int) -> Iterator[int]:
    """Context manager: PID stopped with SIGSTOP for the block (a frozen daemon), SIGCONT
    after it, also when the block fails. Waits until the kernel reports it stopped (T) before
    the block runs. Raises ProcessLookupError when PID does not exist."""
    import signal

    os.kill(pid, signal.SIGSTOP)
    try:
        wait_for(lambda: proc_state(pid) in ("T", "t", ""), timeout=10, interval=0.02)
        yield pid
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def descendants(pid: int) -> set[int]:
    """PID and every process below it now (read from /proc: the parent of each process)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdecimal():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = {pid}, [pid]
    while todo:
        for kid in children.get(todo.pop(), ()):
            if kid not in found:
                found.add(kid)
                todo.append(kid)
    return found


_SS_PID = re.compile(r"pid=(\d+)")


def tcp_clients_of(addr: str, port: int | str) -> set[int]:
    """PIDs of processes holding a TCP connection to ADDR:PORT now (``ss -tnp``): a client
    of a stopped daemon shows up here, its connection accepted by the kernel's backlog."""
    res = subprocess.run(["ss", "-Htnp", "dst", f"{addr}:{port}"], capture_output=True, text=True, timeout=10)
    return {int(p) for p in _SS_PID.findall(res.stdout)}
