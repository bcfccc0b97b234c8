"""ReplayBackend: a --replay path that cannot be examined is a one-line usage error."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from cockpit.backends.replay import ReplayBackend
from cockpit.errors import UsageError


def test_a_name_over_name_max_names_the_path_shortened_and_the_reason():
    with pytest.raises(UsageError) as err:
        ReplayBackend("x" * 5000)
    msg = str(err.value)
    assert msg.startswith("--replay: ") and "xxxx" in msg and "…" in msg
    assert "\n" not in msg and len(msg) < 200
    # Python < 3.14 raises ENAMETOOLONG from is_dir(); later ones say it is not a directory
    assert "File name too long" in msg or "not a directory" in msg


def test_a_home_that_cannot_be_found_is_a_usage_error():
    with pytest.raises(UsageError, match="--replay: cannot read ~no-such-user-here/rec"):
        ReplayBackend("~no-such-user-here/rec")


async def test_a_recorded_file_that_cannot_be_read_is_a_usage_error(tmp_path, monkeypatch):
    (tmp_path / "squeue.json").write_bytes(b"{}")
    backend = ReplayBackend(str(tmp_path))

    def eio(self):
        raise OSError(errno.EIO, "Input/output error", str(self))

    monkeypatch.setattr(Path, "read_bytes", eio)
    with pytest.raises(UsageError, match=r"--replay: cannot read .*squeue\.json: Input/output error"):
        await backend._fetch("squeue.json")
