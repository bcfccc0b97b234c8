"""Fast decoding of big ``squeue --json`` bodies with msgspec, when installed.

A 24.11 job record is ~20 KB (``job_resources`` lists every core), so 100k jobs
are ~750 MB of JSON; ``json.loads`` builds every one of those objects. msgspec
decodes into a Struct that names only the fields cockpit reads and skips the
rest without building it (measured ~20x faster, bench/bench_parse.py).

The records behave like the dicts ``job_from_record`` expects (``.get``). On
any decode problem this returns None and the caller falls back to ``json``,
whose errors carry the precise ParseError message; so behaviour is identical
with or without msgspec, only the speed differs.
"""

from __future__ import annotations

from typing import Any

try:  # optional: cockpit works without it, only slower at 100k jobs
    import msgspec
except ImportError:  # pragma: no cover - depends on the environment
    msgspec = None  # type: ignore[assignment]

_FIELDS = (
    "account", "array_job_id", "array_task_id", "array_task_string", "command", "cpus",
    "current_working_directory", "end_time", "exit_code", "gres_detail", "het_job_id",
    "het_job_offset", "hold", "job_id", "job_state", "name", "node_count", "nodes",
    "partition", "priority", "standard_error", "standard_output", "start_time",
    "state_description", "state_reason", "submit_time", "time_limit", "tres_per_job",
    "tres_per_node", "user_name",
)

_DECODER: Any = None
JobRecord: Any = None

if msgspec is not None:

    def _get(self: Any, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    JobRecord = msgspec.defstruct(
        "JobRecord", [(f, Any, None) for f in _FIELDS], namespace={"get": _get}
    )
    _Doc = msgspec.defstruct(
        "SqueueDoc", [("jobs", list[JobRecord], None), ("errors", Any, None), ("meta", Any, None)]
    )
    _DECODER = msgspec.json.Decoder(_Doc)


def available() -> bool:
    """True when msgspec is importable and the fast path is used."""
    return _DECODER is not None


def decode_jobs(data: bytes | str) -> list[Any] | None:
    """The job records of a squeue/scontrol/restd jobs body, or None when the
    fast path is unavailable or the input needs the careful (json) path."""
    if _DECODER is None or not isinstance(data, (bytes, str)):
        return None
    try:
        doc = _DECODER.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError, RecursionError):
        return None
    return doc.jobs  # None when absent: the json path reports that precisely
