"""known_hosts read once per pool, not once per connection.

Given a file name, asyncssh reads and parses the whole known_hosts file for
every connection it opens. A site's known_hosts often lists every node (a
5000-line file costs ~50 ms of CPU to parse here), so a fan-out to 1000 nodes
spent most of its client CPU re-reading the same file. This cache parses each
file list once and hands asyncssh the parsed object; asyncssh still does the
matching (host, address, port, markers, revocations) exactly as before, so
checking stays as strict as it was. A file whose size, mtime or inode changes
is read again on the next connection, so an operator who accepts a key (or
removes one) is heard without restarting cockpit.

Cached: an explicit ``[ssh] known_hosts``, or ``~/.ssh/known_hosts`` when the
ssh config never chooses files (no UserKnownHostsFile, GlobalKnownHostsFile,
Include or Match). When the config may choose files per host, asyncssh
evaluates it and reads them itself, per connection, as before: learning the
files ourselves would mean parsing the config a second time per host. One
exception: asyncssh reads ``UserKnownHostsFile none`` as "do not check"; when
a config says it, cockpit evaluates the config per host itself and trusts no
key there, as OpenSSH does.
"""

from __future__ import annotations

import getpass
import ipaddress
import os
import re
from pathlib import Path
from typing import Any

from cockpit.remote.settings import SshSettings

# asyncssh is imported where it is used (cockpit.remote.pool says why).


def _nothing_trusted() -> Any:
    import asyncssh

    # an empty parsed list: every key refused. (b"" would not do: asyncssh reads
    # a falsy known_hosts as "use ~/.ssh/known_hosts".)
    return asyncssh.import_known_hosts("")


def _stamp(paths: tuple[str, ...]) -> tuple:
    """What tells us a file changed; raises OSError for a missing file."""
    out = []
    for p in paths:
        st = os.stat(p)
        out.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


class KnownHostsCache:
    """Parsed known_hosts per file list, and the file list per host."""

    def __init__(self, settings: SshSettings) -> None:
        self.settings = settings
        self._config_stamp: tuple | None = None
        self._mode = "default"  # default | asyncssh | parse: see _host_files
        self._host_cache: dict[str, tuple[str, ...]] = {}
        self._parsed: dict[tuple[str, ...], tuple[tuple, Any]] = {}  # files -> (stamp, SSHKnownHosts)
        self.reads = 0  # files lists parsed (tests and benchmarks look at it)

    def for_host(self, host: str) -> Any:
        """The ``known_hosts`` argument for ``asyncssh.connect(host)``: None only
        when strict checking is off; ``()`` (asyncssh reads what the ssh config
        names) when the config chooses files per host; else parsed data.

        Raises OSError when a named file cannot be read, ValueError for a bad
        config, as asyncssh itself would."""
        if not self.settings.strict_host_key_checking:
            return None
        files = self._host_files(host)
        if files is None:
            return ()  # asyncssh reads the files the config names for this host
        if not files:
            return _nothing_trusted()
        stamp = _stamp(files)
        hit = self._parsed.get(files)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        import asyncssh

        parsed = asyncssh.read_known_hosts(list(files))
        self.reads += 1
        self._parsed[files] = (stamp, parsed)
        return parsed

    def files_for(self, host: str) -> tuple[str, ...]:
        """The known_hosts files that apply to ``host``, for messages: where asyncssh
        would evaluate the ssh config per host, it is evaluated here for this one host.
        Raises OSError / ValueError for an unreadable or bad config."""
        if not self.settings.strict_host_key_checking:
            return ()
        files = self._host_files(host)
        if files is None:
            files = self._from_config(host, tuple(self.settings.config_paths()))
        return files

    def holder(self, host: str, names: tuple[str, ...], port: int) -> tuple[str, tuple[str, ...]] | None:
        """The first file of :meth:`files_for` that trusts a key for ``host`` under any
        of ``names`` (alias, HostName, address) at ``port``, and the names it holds one
        for; None when no file does: the key is unknown rather than changed. Files
        that cannot be read are skipped."""
        import asyncssh

        for path in self.files_for(host):
            try:
                known = asyncssh.read_known_hosts(path)
            except (OSError, ValueError, asyncssh.Error):
                continue
            # match() takes a host pattern and an IP (or None), either may match a line
            held = tuple(n for n in names if known.match(n, n if _is_ip(n) else None, port)[0])
            if held:
                return path, held
        return None

    def _host_files(self, host: str) -> tuple[str, ...] | None:
        """The files that apply to ``host``, or None when only asyncssh's own
        per-host config evaluation can tell (then it reads them itself)."""
        s = self.settings
        explicit = s.known_hosts_arg()
        if explicit != ():
            return tuple(explicit)
        configs = tuple(s.config_paths())
        cstamp = _stamp(configs)
        if self._config_stamp != cstamp:
            texts = [_read(p) for p in configs]
            self._config_stamp, self._host_cache = cstamp, {}
            self._mode = ("parse" if any(_NONE.search(t) for t in texts) else
                          "asyncssh" if any(_CHOOSERS.search(t) for t in texts) else "default")
        if self._mode == "asyncssh":
            # Learning the files ourselves would parse the ssh config a second
            # time per host, which costs more than the cache saves when the
            # config is large (measured: a 200-host config, 30 ms per host).
            return None
        if self._mode == "parse":  # "UserKnownHostsFile none" somewhere: asyncssh would stop checking
            if host not in self._host_cache:
                self._host_cache[host] = self._from_config(host, configs)
            return self._host_cache[host]
        return _default_file()

    def _from_config(self, host: str, configs: tuple[str, ...]) -> tuple[str, ...]:
        from asyncssh.config import SSHClientConfig

        cfg = SSHClientConfig.load(None, list(configs) or None, False, False, False,
                                   getpass.getuser(), self.settings.user or (), host, ())
        user = cfg.get("UserKnownHostsFile", ())
        if user == []:  # "UserKnownHostsFile none": nothing is trusted, as in OpenSSH
            return ()
        files = [*user, *cfg.get("GlobalKnownHostsFile", [])]
        return tuple(str(Path(f).expanduser()) for f in files) if files else _default_file()


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _default_file() -> tuple[str, ...]:
    default = Path("~", ".ssh", "known_hosts").expanduser()
    return (str(default),) if default.is_file() and os.access(default, os.R_OK) else ()


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return "Include unreadable"  # unknown content: let asyncssh decide


_NONE = re.compile(r"^\s*UserKnownHostsFile\s*=?\s*none\s*$", re.I | re.M)
_CHOOSERS = re.compile(r"^\s*(UserKnownHostsFile|GlobalKnownHostsFile|Include|Match)\b", re.I | re.M)


