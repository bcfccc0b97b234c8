"""A file on a remote host, read through the SSH pool: its tail, then what is
appended to it, by byte offset.

Only two programs run on the host, each as an argv whose every argument the
pool quotes: ``stat -L -c '%s %i' -- PATH`` (size and inode) and
``tail -c +OFFSET -- PATH`` (the bytes from OFFSET to the end). Reading by byte
offset rather than ``tail -n`` makes the hand-over from the tail to following
exact: the position after a read is the offset plus the bytes received, so no
line is shown twice or lost while the job writes. A smaller size than our
position (truncated) or a new inode (replaced) starts again at byte 0.

Bytes are returned raw; :mod:`cockpit.core.joblog` decodes and sanitises them.
"""

from __future__ import annotations

from dataclasses import dataclass

from cockpit.text import sanitize
from cockpit.errors import CockpitError
from cockpit.remote.pool import SshPool


class RemoteFileError(CockpitError):
    """The file cannot be read on that host (missing, permission, no tools)."""


@dataclass(frozen=True, slots=True)
class FileState:
    size: int
    inode: int


def parse_stat(text: str) -> FileState | None:
    """``SIZE INODE`` as printed by ``stat -c '%s %i'``; None when it is not that."""
    parts = text.split()
    if len(parts) != 2 or not all(p.isdecimal() for p in parts):
        return None
    return FileState(int(parts[0]), int(parts[1]))


class RemoteFile:
    """One path on one host; keeps the read position between calls."""

    def __init__(self, pool: SshPool, host: str, path: str, *, timeout: float | None = None) -> None:
        self.pool, self.host, self.path, self.timeout = pool, host, path, timeout
        self.pos: int | None = None  # next byte to read; None before the first read
        self.inode: int | None = None
        self.was_missing = False  # seen missing: when it appears, read it from its start

    @property
    def where(self) -> str:
        return f"{self.host}:{self.path}"

    async def stat(self) -> FileState | None:
        """Size and inode, or None when the file is missing or unreadable there.

        Raises SshError/CommandTimeout (CockpitError) when the host cannot be asked."""
        res = await self.pool.run(self.host, ["stat", "-L", "-c", "%s %i", "--", self.path], timeout=self.timeout)
        return parse_stat(res.text()) if res.ok else None

    async def why_unreadable(self) -> str:
        """The remote tools' own words for a missing/unreadable file (one line)."""
        res = await self.pool.run(self.host, ["tail", "-c", "1", "--", self.path], timeout=self.timeout)
        return _last_error(res, "tail")

    async def read_from(self, offset: int) -> bytes:
        """The bytes from ``offset`` to the current end. Raises RemoteFileError
        (the remote tail's message) or the pool's SshError/CommandTimeout."""
        res = await self.pool.run(self.host, ["tail", "-c", f"+{offset + 1}", "--", self.path], timeout=self.timeout)
        if not res.ok:
            raise RemoteFileError(f"{sanitize(self.where)}: {_last_error(res, 'tail')}")
        return res.stdout

    async def last_bytes(self, count: int) -> tuple[bytes, bool]:
        """The file's last ``count`` bytes (or more, if it grew meanwhile) and
        whether the read began mid-file; sets the position to the end.

        Raises RemoteFileError when the file cannot be read there."""
        st = await self.stat()
        if st is None:
            raise RemoteFileError(f"cannot read {sanitize(self.where)}: {await self.why_unreadable()}")
        start = max(0, st.size - count)
        data = await self.read_from(start)
        self.pos, self.inode = start + len(data), st.inode
        return data, start > 0

    async def poll(self) -> bytes | None:
        """What was appended since the last read (b"" when nothing); None while the
        file is missing. A fresh object starts at the end, unless the file was
        missing first (then everything it gets is new). Raises like :meth:`read_from`."""
        st = await self.stat()
        if st is None:
            self.was_missing = True
            return None
        if self.pos is None and self.was_missing:
            self.pos, self.inode = 0, st.inode
        if self.pos is None or self.inode != st.inode or st.size < self.pos:
            # first sight starts at the end; a replaced or truncated file from 0
            self.pos = st.size if self.pos is None else 0
            self.inode = st.inode
        if st.size <= self.pos:
            return b""
        data = await self.read_from(self.pos)
        self.pos += len(data)
        return data


def _last_error(res, tool: str) -> str:
    """The last line a remote tool wrote to stderr, made safe to print (it quotes
    the path, which is cluster data)."""
    lines = res.err_text().strip().splitlines()
    return sanitize(lines[-1]) if lines else f"{tool} exited {res.returncode}"
