"""Fan-out benchmark: cockpit's asyncssh fan-out against ClusterShell's clush.

Starts its own throwaway sshd servers on loopback (127.0.21.1-N, key-only,
temp host key), writes an OpenSSH client config with TARGETS aliases spread
over them (distinct target names, so each is its own connection for both
tools), then runs the same command through both with the same window and
prints wall times and the ratio. Target: cockpit <= 1.2x clush. Prints,
never asserts. Needs root (sshd) and the [test] extras.

The remote login user matters: sshd runs every command through that user's
shell, and bash sources ~/.bashrc for ssh commands. Root's ~/.bashrc on the
build machine runs `pyenv init`, whose rehash takes a global lock and polls it
with `sleep 0.1`, so 64 concurrent sessions queue on that lock and the run
measures pyenv rather than fan-out (and punishes whichever client reaches the
exec stage fastest). ``--user`` picks the login user; by default the test
cluster's unprivileged user when it exists (a stock ~/.bashrc that returns at
once for non-interactive shells), else root. The figures printed include the
user, one sequential `true` per tool (the per-session floor) and the load.

    .venv/bin/python bench/bench_fanout.py [--targets 200] [--servers 5] [--window 64] [--rounds 3] [--user NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "remote"))
sys.path.insert(0, str(ROOT))

from sshdlib import SshdFarm, available  # noqa: E402

from cockpit.remote.fanout import fanout  # noqa: E402
from cockpit.remote.pool import SshPool  # noqa: E402
from cockpit.remote.settings import SshSettings  # noqa: E402

COMMAND = ["uname", "-r"]


DEFAULT_USERS = ("cockpit-user", "root")  # the test cluster's unprivileged user, if it exists


def default_user() -> str:
    for name in DEFAULT_USERS:
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    return "root"


def write_alias_config(farm: SshdFarm, targets: int, user: str = "root") -> tuple[Path, list[str]]:
    """t001..tNNN, round-robin over the farm's servers, logging in as ``user``."""
    servers = list(farm.servers.values())
    names, blocks = [], []
    for i in range(targets):
        srv = servers[i % len(servers)]
        name = f"t{i + 1:03d}"
        names.append(name)
        blocks.append(f"Host {name}\n  HostName {srv.addr}\n  Port {srv.port}\n")
    blocks.append(
        f"Host t*\n  User {user}\n  IdentityFile {farm.dir}/id_ed25519\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {farm.known_hosts}\n  StrictHostKeyChecking yes\n  BatchMode yes\n"
    )
    path = farm.dir / "bench_ssh_config"
    path.write_text("\n".join(blocks))
    return path, names


def run_clush(cfg: Path, names: list[str], window: int) -> tuple[float, int]:
    clush = shutil.which("clush", path=str(Path(sys.executable).parent)) or shutil.which("clush")
    if clush is None:
        raise SystemExit("clush not found: pip install ClusterShell")
    argv = [clush, "-w", ",".join(names), "-f", str(window), "-o", f"-F {cfg}", "-L", "-S", *COMMAND]
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.monotonic() - start
    # -L prints "host: line": a host counts as done when its line came back
    done = {line.split(":", 1)[0] for line in proc.stdout.splitlines() if ":" in line}
    return wall, len(set(names) - done)


async def run_cockpit(cfg: Path, names: list[str], window: int, known_hosts: Path) -> tuple[float, int]:
    # known_hosts as `[ssh] known_hosts` names it: the same file the ssh config gives clush
    settings = SshSettings(config_file=str(cfg), known_hosts=str(known_hosts), fanout_window=window,
                           connect_timeout=30, command_timeout=60)
    pool = SshPool(settings)
    start = time.monotonic()
    try:
        res = await fanout(pool, names, COMMAND)
    finally:
        await pool.close()
    wall = time.monotonic() - start
    return wall, sum(1 for r in res.values() if not r.ok)


def one_session(cfg: Path, name: str, known_hosts: Path) -> tuple[float, float]:
    """Seconds for one `true` through ssh and through cockpit: the per-session floor."""
    start = time.monotonic()
    subprocess.run(["ssh", "-F", str(cfg), name, "true"], capture_output=True)
    ssh = time.monotonic() - start

    async def one() -> float:
        pool = SshPool(SshSettings(config_file=str(cfg), known_hosts=str(known_hosts)))
        t = time.monotonic()
        try:
            await pool.run(name, ["true"])
        finally:
            await pool.close()
        return time.monotonic() - t

    return ssh, asyncio.run(one())


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", type=int, default=200)
    ap.add_argument("--servers", type=int, default=5)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--user", default=default_user(), help="remote login user (default: %(default)s)")
    a = ap.parse_args()
    why = available()
    if why:
        print(f"bench_fanout: cannot run: {why}")
        return 0
    with tempfile.TemporaryDirectory(prefix="cockpit-bench-sshd-") as tmp:
        os.chmod(tmp, 0o755)  # sshd reads authorized_keys as the login user
        farm = SshdFarm(Path(tmp)).setup(a.servers, net="127.0.21")
        try:
            os.chmod(farm.dir / "authorized_keys", 0o644)
            cfg, names = write_alias_config(farm, a.targets, a.user)
            ssh1, ck1 = one_session(cfg, names[0], farm.known_hosts)
            print(f"login user {a.user}: one sequential session: ssh {ssh1 * 1000:.0f} ms, cockpit {ck1 * 1000:.0f} ms")
            print(f"before: {load()}")
            c_times, k_times = [], []
            for r in range(a.rounds):  # alternate so neither tool always runs on a warmer machine
                cw, cf = run_clush(cfg, names, a.window)
                kw, kf = asyncio.run(run_cockpit(cfg, names, a.window, farm.known_hosts))
                c_times.append(cw)
                k_times.append(kw)
                print(f"round {r + 1}: clush {cw:.2f} s ({cf} failed)   cockpit {kw:.2f} s ({kf} failed)   {load()}")
        finally:
            farm.teardown()
    print(f"after: {load()}")
    c, k = statistics.median(c_times), statistics.median(k_times)
    print(f"targets={a.targets} over {a.servers} sshd, window={a.window}, command={' '.join(COMMAND)!r}, user={a.user}")
    print(f"clush   median wall: {c:.2f} s")
    print(f"cockpit median wall: {k:.2f} s")
    print(f"ratio cockpit/clush: {k / c:.2f} (target <= 1.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
