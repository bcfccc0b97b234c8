"""Replay a directory written by ``cockpit record``: the same parsing path as
the live CLI backend, reading files instead of running commands."""

from __future__ import annotations

from pathlib import Path

from cockpit.backends.slurm_cli import COMMANDS, SlurmCliBackend, Unsupported
from cockpit.errors import UsageError


class ReplayBackend(SlurmCliBackend):
    name = "replay"
    cannot_act = "a replay of recorded outputs cannot act on a cluster"

    def __init__(self, directory: str) -> None:
        super().__init__(runner=None)
        self.dir = Path(directory).expanduser()
        if not self.dir.is_dir():
            raise UsageError(f"--replay: not a directory: {directory}")
        if not any((self.dir / key).is_file() for key in COMMANDS):
            raise UsageError(f"--replay: {directory} holds no recorded outputs ({', '.join(COMMANDS)})")
        self.description = f"replay of {self.dir}"

    async def _fetch(self, key: str) -> bytes:
        path = self.dir / key
        if not path.is_file():
            raise Unsupported(list(COMMANDS[key]), 1, f"{key} is not in the recording {self.dir}")
        return path.read_bytes()

    async def snapshot(self):
        snap = await super().snapshot()
        # A replay is as old as its recording, not "now".
        from dataclasses import replace

        mtime = max((self.dir / k).stat().st_mtime for k in COMMANDS if (self.dir / k).is_file())
        return replace(snap, fetched_at=mtime)
