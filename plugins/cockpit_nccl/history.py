"""Past results as JSON Lines, one record per judged run, so regressions show.

Default file: ``$XDG_DATA_HOME/cockpit/nccl-history.jsonl`` (``~/.local/share``
when unset); ``[plugins.nccl] history_file`` overrides it. A record is keyed by
node set + engine + collective + rank count: only like is compared with like.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cockpit.plugins.api import ConfigError
from cockpit.plugins.api import collapse
from cockpit.plugins.api import data_home


def default_path() -> Path:
    """$XDG_DATA_HOME/cockpit/nccl-history.jsonl (~/.local/share when unset)."""
    return data_home() / "nccl-history.jsonl"


def history_key(nodes: Iterable[str], engine: str, collective: str | None, nranks: int | None) -> str:
    return f"{collapse(sorted(set(nodes)))}|{engine}|{collective or 'all_reduce'}|{nranks or '?'}"


@dataclass
class History:
    path: Path

    def records(self, key: str | None = None) -> list[dict]:
        """Records in file order; lines that are not JSON objects are skipped (a torn write)."""
        if not self.path.exists():
            return []
        out = []
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ConfigError(f"history file {self.path}: {exc.strerror}") from None
        for line in lines:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and (key is None or rec.get("key") == key):
                out.append(rec)
        return out

    def baseline(self, key: str, window: int = 20, min_runs: int = 3) -> float | None:
        """Median busbw of the last ``window`` runs under ``key``; None with fewer than min_runs."""
        vals = [r["busbw"] for r in self.records(key)
                if isinstance(r.get("busbw"), (int, float)) and r["busbw"] > 0][-window:]
        if len(vals) < max(min_runs, 1):
            return None
        return float(statistics.median(vals))

    def append(self, key: str, record: dict) -> None:
        """Append one record; raises ConfigError when the file cannot be written."""
        rec = {"time": int(time.time()), "key": key, **record}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(rec, sort_keys=True) + "\n")
        except OSError as exc:
            raise ConfigError(f"history file {self.path}: {exc.strerror}") from None
