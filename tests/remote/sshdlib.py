"""Throwaway real OpenSSH servers for the SSH tests (no mocks).

Each server listens on its own loopback address (127.0.20.N) with a temp host
key and key-only auth; a client key, known_hosts and an OpenSSH client config
with one alias per server are generated beside them. Servers are started with
``sshd -D`` as our own children and stopped by PID.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"

SSHD_CONFIG = """\
ListenAddress {addr}:{port}
HostKey {dir}/host_ed25519
PidFile {dir}/sshd-{name}.pid
AuthorizedKeysFile {dir}/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
X11Forwarding no
PrintMotd no
MaxStartups 300:30:600
MaxSessions 100
StrictModes no
"""


def available() -> str | None:
    """None when real sshd tests can run here, else the reason they cannot."""
    if not os.path.exists(SSHD):
        return "sshd is not installed"
    if os.geteuid() != 0:
        return "sshd tests need root (sshd privilege separation)"
    if not shutil.which("ssh-keygen"):
        return "ssh-keygen is not installed"
    return None


def _free_port(addr: str) -> int:
    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


@dataclass
class Server:
    name: str
    addr: str
    port: int
    proc: subprocess.Popen | None = None


@dataclass
class SshdFarm:
    """N sshd servers plus a client config; ``names`` are the ssh aliases."""

    dir: Path
    servers: dict[str, Server] = field(default_factory=dict)

    @property
    def ssh_config(self) -> Path:
        return self.dir / "ssh_config"

    @property
    def known_hosts(self) -> Path:
        return self.dir / "known_hosts"

    @property
    def names(self) -> list[str]:
        return list(self.servers)

    def setup(self, count: int, net: str = "127.0.20") -> "SshdFarm":
        self.dir.mkdir(parents=True, exist_ok=True)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privsep dir
        for key in ("host_ed25519", "id_ed25519"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.dir / key)], check=True)
        shutil.copy(self.dir / "id_ed25519.pub", self.dir / "authorized_keys")
        hostkey = (self.dir / "host_ed25519.pub").read_text().split()[:2]
        cfg, kh = [], []
        for i in range(1, count + 1):
            name, addr = f"tnode{i:02d}", f"{net}.{i}"
            srv = Server(name, addr, _free_port(addr))
            self.servers[name] = srv
            (self.dir / f"sshd-{name}.conf").write_text(SSHD_CONFIG.format(addr=addr, port=srv.port, dir=self.dir, name=name))
            cfg.append(
                f"Host {name}\n  HostName {addr}\n  Port {srv.port}\n  User root\n"
                f"  IdentityFile {self.dir}/id_ed25519\n  IdentitiesOnly yes\n"
                f"  UserKnownHostsFile {self.known_hosts}\n  StrictHostKeyChecking yes\n"
                f"  BatchMode yes\n"
            )
            kh.append(f"[{addr}]:{srv.port} {' '.join(hostkey)}")
        self.ssh_config.write_text("\n".join(cfg))
        self.known_hosts.write_text("\n".join(kh) + "\n")
        for srv in self.servers.values():
            self.start(srv.name)
        return self

    def start(self, name: str) -> None:
        srv = self.servers[name]
        srv.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(self.dir / f"sshd-{name}.conf")],
            stdout=subprocess.DEVNULL, stderr=open(self.dir / f"sshd-{name}.log", "ab"),
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection((srv.addr, srv.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd for {name} did not start; see {self.dir}/sshd-{name}.log")

    def pid(self, name: str) -> int:
        proc = self.servers[name].proc
        assert proc is not None
        return proc.pid

    def children(self, name: str) -> list[int]:
        """PIDs of the session processes under the listener (for freezing them).

        All descendants: OpenSSH 10 (Debian 13) forks an sshd-session monitor
        that forks the process holding the connection, one level deeper than 9.x."""
        found, todo = [], [self.pid(name)]
        while todo:
            out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(todo.pop())], capture_output=True, text=True)
            kids = [int(p) for p in out.stdout.split()]
            found += kids
            todo += kids
        return found

    def stop(self, name: str) -> None:
        proc = self.servers[name].proc
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.servers[name].proc = None

    def signal(self, pids: list[int], sig: int) -> None:
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def teardown(self) -> None:
        for name in self.servers:
            try:
                self.signal([self.pid(name), *self.children(name)], signal.SIGCONT)
            except AssertionError:
                pass
            self.stop(name)
