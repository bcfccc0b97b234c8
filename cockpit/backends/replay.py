"""Replay a directory written by ``cockpit record``: the same parsing path as
the live CLI backend, reading files instead of running commands."""

from __future__ import annotations

from pathlib import Path

from cockpit.backends import slurm_json
from cockpit.backends.slurm_cli import COMMANDS, SlurmCliBackend, Unsupported
from cockpit.backends.slurm_json_common import load_json
from cockpit.errors import ParseError, UsageError
from cockpit.text import truncate


PARTITIONS_JSON = "partitions.json"
_TEXT_MAX = 64 << 20  # a saved text bigger than this is not a paste: left alone  # a slurmrestd /partitions body, where no scontrol text was recorded


class ReplayBackend(SlurmCliBackend):
    name = "replay"
    cannot_act = "a replay of recorded outputs cannot act on a cluster"

    def __init__(self, directory: str) -> None:
        """Raises UsageError naming the directory when it is not one, holds no
        recording, or cannot be examined (a name too long, no permission)."""
        super().__init__(runner=None)
        shown = truncate(directory, 120)
        try:
            self.dir = Path(directory).expanduser()
            is_dir = self.dir.is_dir()
            recorded = is_dir and any((self.dir / key).is_file() for key in COMMANDS)
            self._text: dict[str, bytes] | None = None
            if is_dir and not recorded:
                self._text = self._text_captures()
                recorded = bool(self._text)
        except (OSError, RuntimeError) as exc:  # RuntimeError: "~nobody" has no home
            raise _unreadable(shown, exc) from None
        if not is_dir:
            raise UsageError(f"--replay: not a directory: {shown}")
        if not recorded:
            raise UsageError(f"--replay: {shown} holds no recorded outputs ({', '.join(COMMANDS)}) and no saved "
                             "scontrol show node|job|partition or squeue text")
        self.description = f"replay of {self.dir}" + (" (saved Slurm text)" if self._text else "")

    def _text_captures(self) -> dict[str, bytes]:
        """A folder of saved Slurm text (replay_text): its outputs as recorded keys; the
        files it could not use are said in every snapshot's errors."""
        from cockpit.backends import replay_text

        files = {p.name: p.read_text("utf-8", "replace") for p in sorted(self.dir.iterdir())
                 if p.is_file() and not p.name.startswith(".") and p.stat().st_size <= _TEXT_MAX}
        out, self._text_warnings = replay_text.recording(files)
        if out:
            self._version = replay_text.version_of(files) or None
        return out

    async def _fetch(self, key: str) -> bytes:
        if self._text is not None:
            if key in self._text:
                return self._text[key]
            if key == "scontrol-partitions.txt" and "scontrol-nodes.json" in self._text:
                return b""  # none saved: the partitions are the nodes' (fetch_partitions)
            raise Unsupported(list(COMMANDS[key]), 1, f"no saved text stands for {key} in {self.dir}")
        path = self.dir / key
        try:
            data = path.read_bytes() if path.is_file() else None
        except OSError as exc:  # unreadable, or removed since the recording was checked
            raise _unreadable(truncate(str(path), 120), exc) from None
        if data is None:
            raise Unsupported(list(COMMANDS[key]), 1, f"{key} is not in the recording {self.dir}")
        return data

    # A recording made from slurmrestd bodies (``/nodes``, ``/jobs``, ``/partitions``)
    # has no text outputs: its version is in the JSON's meta, its partitions in
    # partitions.json. Both are read from there rather than reported missing.
    async def version(self) -> str:
        if self._version is None and not (self.dir / "version.txt").is_file():
            self._version = self._meta_version()
        return await super().version()

    def _meta_version(self) -> str:
        for key in ("scontrol-nodes.json", "squeue.json", "sinfo.json"):
            path = self.dir / key
            if path.is_file():
                try:
                    found = slurm_json.parse_version(load_json(path.read_bytes(), key))
                except (OSError, ParseError):
                    continue
                if found:
                    return found
        raise Unsupported(list(COMMANDS["version.txt"]), 1, f"version.txt is not in the recording {self.dir}")

    async def fetch_partitions(self):
        if self._text is not None and "scontrol-partitions.txt" not in self._text and "scontrol-nodes.json" in self._text:
            from cockpit.backends.slurm_json_nodes import parse_scontrol_nodes, partitions_from_nodes

            return partitions_from_nodes(parse_scontrol_nodes(self._text["scontrol-nodes.json"], warnings=[]))
        body = self.dir / PARTITIONS_JSON
        if (self.dir / "scontrol-partitions.txt").is_file() or not body.is_file():
            return await super().fetch_partitions()
        try:
            raw = body.read_bytes()
        except OSError as exc:
            raise _unreadable(truncate(str(body), 120), exc) from None
        found: list[str] = []
        parts = slurm_json.parse_partitions(raw, PARTITIONS_JSON, warnings=found)
        self.note_warnings("scontrol-partitions.txt", found)
        return parts

    async def snapshot(self):
        snap = await super().snapshot()
        # A replay is as old as its recording, not "now".
        from dataclasses import replace

        if self._text is not None:
            return replace(snap, errors=snap.errors + tuple(self._text_warnings))
        try:
            mtime = max((self.dir / k).stat().st_mtime for k in COMMANDS if (self.dir / k).is_file())
        except OSError as exc:
            raise _unreadable(truncate(str(self.dir), 120), exc) from None
        return replace(snap, fetched_at=mtime)


def _unreadable(shown: str, exc: Exception) -> UsageError:
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return UsageError(f"--replay: cannot read {shown}: {reason}")
