"""SSH settings from the config, the asyncssh options they become, and the
one-line messages an operator sees when a connection fails.

We let asyncssh read the OpenSSH client config itself (Host, HostName, User,
Port, IdentityFile, ProxyJump, UserKnownHostsFile, ServerAlive*), so cockpit
behaves the way ``ssh HOST`` does; the cockpit config only adds timeouts,
the fan-out window, strictness and an optional jump host.
"""

from __future__ import annotations

import asyncio
import getpass
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# asyncssh is imported where it is used (cockpit.remote.pool says why).
DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
# AES-GCM first: in asyncssh chacha20-poly1305 builds a cipher context per
# packet and was ~20% of the client CPU of a 100-node fan-out (profiled);
# every OpenSSH server since 6.2 offers AES-GCM. The rest keep the usual order.
ENCRYPTION_ALGS = (
    "aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
    "aes128-ctr", "aes192-ctr", "aes256-ctr",
)


@dataclass(frozen=True)
class SshSettings:
    """Everything the pool needs; built from ``Config.ssh`` by :func:`from_config`."""

    config_file: str = "~/.ssh/config"
    known_hosts: str = DEFAULT_KNOWN_HOSTS
    strict_host_key_checking: bool = True
    connect_timeout: float = 10.0
    command_timeout: float = 30.0
    keepalive_interval: float = 15.0
    fanout_window: int = 64
    jump_host: str = ""
    user: str = ""
    remote_path_prepend: str = ""

    @classmethod
    def from_config(cls, cfg: Any) -> "SshSettings":
        """Copy the [ssh] section (unknown extra keys are ignored)."""
        ssh = cfg.ssh
        names = cls.__dataclass_fields__
        return cls(**{n: getattr(ssh, n) for n in names if hasattr(ssh, n)})

    def config_paths(self) -> list[str]:
        """The OpenSSH config files to read; a missing file is simply skipped."""
        path = Path(self.config_file).expanduser() if self.config_file else None
        return [str(path)] if path and path.is_file() else []

    def known_hosts_arg(self) -> Any:
        """asyncssh's ``known_hosts``: None turns checking off (only when asked),
        ``()`` lets the ssh config's UserKnownHostsFile or ~/.ssh/known_hosts apply."""
        if not self.strict_host_key_checking:
            return None
        if self.known_hosts and self.known_hosts != DEFAULT_KNOWN_HOSTS:
            return [str(Path(self.known_hosts).expanduser())]
        return ()

    def connect_kwargs(self, host: str, tunnel: Any = None) -> dict[str, Any]:
        """Keyword arguments for ``asyncssh.connect(host, **kw)``."""
        kw: dict[str, Any] = {
            "config": self.config_paths() or None,
            "known_hosts": self.known_hosts_arg(),
            "connect_timeout": self.connect_timeout or None,
            "keepalive_interval": self.keepalive_interval or None,
            "keepalive_count_max": 3,
            "encryption_algs": list(ENCRYPTION_ALGS),
        }
        if self.user:
            kw["username"] = self.user
        if tunnel is not None:
            kw["tunnel"] = tunnel
        return kw


def node_settings(cfg: Any, cluster: str | None = None) -> SshSettings:
    """SSH settings for compute nodes: [ssh], with [clusters.NAME] jump_host when
    that cluster is named, or (unnamed, as in the TUI) when its host is the
    session's ``[general] host``."""
    from dataclasses import replace

    settings = SshSettings.from_config(cfg)
    clusters = getattr(cfg, "clusters", {}) or {}
    chosen = clusters.get(cluster) if cluster else None
    if chosen is None and not cluster:
        host = getattr(getattr(cfg, "general", None), "host", "")
        chosen = next((c for c in clusters.values() if host and c.host == host and c.jump_host), None)
    if chosen is not None and chosen.jump_host:
        settings = replace(settings, jump_host=chosen.jump_host)
    return settings


def remote_command(argv: Sequence[str], path_prepend: str = "") -> str:
    """The one string sshd hands to the remote shell: every argument quoted.

    ``path_prepend`` (from config, never from cluster data) puts directories in
    front of the remote PATH, for tools such as nvidia-smi outside the default.
    """
    if not argv:
        raise ValueError("empty argv")
    cmd = " ".join(shlex.quote(str(a)) for a in argv)
    if path_prepend:
        cmd = f'PATH={shlex.quote(path_prepend)}:"$PATH" exec {cmd}'
    return cmd


def _resolve(settings: SshSettings, host: str) -> tuple[str, int]:
    """(HostName, Port) as the ssh config gives them, for messages only."""
    try:
        from asyncssh.config import SSHClientConfig

        cfg = SSHClientConfig.load(
            None, settings.config_paths(), False, False, False,
            getpass.getuser(), settings.user or (), host, (),
        )
        return str(cfg.get("Hostname", host) or host), int(cfg.get("Port", 22) or 22)
    except Exception:  # messages must never fail because the config is odd
        return host, 22


def host_key_advice(settings: SshSettings, host: str) -> str:
    """How an operator accepts a host key after checking its fingerprint."""
    addr, port = _resolve(settings, host)
    kh = settings.known_hosts if settings.known_hosts_arg() != () else "your known_hosts"
    scan = f"ssh-keyscan -p {port} {addr}" if port != 22 else f"ssh-keyscan {addr}"
    return (
        f"to accept it, check the fingerprint and run `ssh {host}` once, or add "
        f"`{scan}` output to {kh}"
    )


def host_key_refusal(settings: SshSettings, host: str, known: Any) -> str:
    """The one line for a host key that strict checking refused, told apart: a key the
    known_hosts file holds another key for (changed) or no key at all (unknown), each
    with the exact commands that accept the key the host offers now. ``known`` is the
    pool's KnownHostsCache. Never raises: odd configs get the general advice."""
    try:
        addr, port = _resolve(settings, host)
        names = tuple(dict.fromkeys((host, addr)))
        holder = known.holder(host, names, port)
        files = known.files_for(host)
    except Exception:  # messages must never fail because the config is odd
        import asyncssh

        return describe_error(settings, host, asyncssh.HostKeyNotVerifiable("host key not verifiable"))
    def entry(name: str) -> str:  # how known_hosts names a host on this port
        return f"[{name}]:{port}" if port != 22 else name

    scan = f"ssh-keyscan -p {port} {addr}" if port != 22 else f"ssh-keyscan {addr}"
    path = holder[0] if holder else (files[0] if files else str(Path(DEFAULT_KNOWN_HOSTS).expanduser()))
    where = shlex.quote(path)
    if holder is None:
        return (
            f"ssh {host}: host key unknown or changed, refused (strict_host_key_checking is on): "
            f"{where} has no key for {entry(addr)}; to accept it, check its fingerprint "
            f"(`{scan} | ssh-keygen -lf -`) and run `{scan} >> {where}`"
        )
    # The old key goes under every name the file holds it for (alias and address), then
    # the key offered now is added for the address, which asyncssh and OpenSSH both match.
    remove = " && ".join(f"ssh-keygen -R {shlex.quote(entry(n))} -f {where}" for n in holder[1])
    return (
        f"ssh {host}: host key changed, refused (strict_host_key_checking is on): "
        f"it is not the key {where} holds for {entry(holder[1][0])}; if the host was reinstalled, "
        f"check the new key's fingerprint (`{scan} | ssh-keygen -lf -`) and accept it with "
        f"`{remove} && {scan} >> {where}`"
    )


def describe_error(settings: SshSettings, host: str, exc: BaseException) -> str:
    """One line naming the host and the cause; never a traceback."""
    import asyncssh

    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return (
            f"ssh {host}: host key unknown or changed, refused "
            f"(strict_host_key_checking is on); {host_key_advice(settings, host)}"
        )
    if isinstance(exc, asyncssh.PermissionDenied):
        return f"ssh {host}: authentication refused (no key was accepted: agent, IdentityFile)"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return f"ssh {host}: no answer within {settings.connect_timeout:g} s (connect timeout)"
    if isinstance(exc, ConnectionRefusedError):
        return f"ssh {host}: connection refused"
    if isinstance(exc, asyncssh.DisconnectError):
        return f"ssh {host}: disconnected: {exc.reason}"
    if isinstance(exc, asyncssh.ChannelOpenError):
        return f"ssh {host}: cannot open a session: {exc.reason}"
    if isinstance(exc, OSError):
        return f"ssh {host}: {exc.strerror or exc}"
    return f"ssh {host}: {type(exc).__name__}: {exc}"
