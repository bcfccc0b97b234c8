"""Parse ``nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits``.

Field names and formats: shared/REFERENCE.md section 5 (driver 590
``--help-query-gpu``). Values that a GPU or driver does not support come back
as ``[N/A]``, ``N/A`` or ``[Requested functionality has been deprecated]``:
they become None, never 0. If the output carries a header line (``--format=csv``
without ``noheader``, as in recorded captures) columns are matched by name,
units such as ``81559 MiB`` are stripped, and fields the header lacks are None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cockpit.errors import ParseError
from cockpit.models.unread import unread

# (query field, attribute, kind). clocks_event_reasons.active is the 535+ name;
# drivers before 535 only know clocks_throttle_reasons.active (see LEGACY_NAMES).
FIELD_SPECS: tuple[tuple[str, str, str], ...] = (
    ("index", "index", "int"),
    ("uuid", "uuid", "str"),
    ("name", "name", "str"),
    ("pci.bus_id", "pci_bus_id", "str"),
    ("utilization.gpu", "util_gpu", "float"),
    ("utilization.memory", "util_mem", "float"),
    ("memory.total", "mem_total_mib", "float"),
    ("memory.used", "mem_used_mib", "float"),
    ("temperature.gpu", "temp_gpu", "float"),
    ("temperature.memory", "temp_mem", "float"),
    ("power.draw", "power_w", "float"),
    ("power.limit", "power_limit_w", "float"),
    ("clocks.current.sm", "clock_sm_mhz", "float"),
    ("clocks.max.sm", "clock_sm_max_mhz", "float"),
    ("clocks_event_reasons.active", "clock_event_reasons", "hex"),
    ("ecc.mode.current", "ecc_mode", "str"),
    ("ecc.errors.corrected.volatile.total", "ecc_corr_volatile", "int"),
    ("ecc.errors.uncorrected.volatile.total", "ecc_uncorr_volatile", "int"),
    ("ecc.errors.corrected.aggregate.total", "ecc_corr_aggregate", "int"),
    ("ecc.errors.uncorrected.aggregate.total", "ecc_uncorr_aggregate", "int"),
    ("remapped_rows.correctable", "remapped_correctable", "int"),
    ("remapped_rows.uncorrectable", "remapped_uncorrectable", "int"),
    ("remapped_rows.pending", "remapped_pending", "bool"),
    ("remapped_rows.failure", "remapped_failure", "bool"),
    ("pcie.link.gen.current", "pcie_gen", "int"),
    ("pcie.link.gen.max", "pcie_gen_max", "int"),
    ("pcie.link.width.current", "pcie_width", "int"),
    ("pcie.link.width.max", "pcie_width_max", "int"),
)
QUERY_FIELDS: tuple[str, ...] = tuple(f for f, _, _ in FIELD_SPECS)
LEGACY_NAMES = {"clocks_throttle_reasons.active": "clocks_event_reasons.active"}

# Bits of clocks_event_reasons.active (REFERENCE.md section 4, same mask as DCGM), checked
# against NVML's nvmlClocksEventReasons (R550 reference: 0x1..0x100) and DCGM's
# DCGM_CLOCKS_EVENT_REASON_* field constants, which are "a 1:1 map to the NVML reasons".
# Newer NVML lists BoardLimit and Reliability too; a bit not named here is shown as
# "bit_0x...", never dropped (a GPU held back for a reason cockpit does not know is said).
CLOCK_EVENT_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clocks_setting",
}
# Reasons that mean the GPU is held back (idle, app clocks, sync boost are benign).
THROTTLE_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80

_NA = re.compile(r"^\[?(N/A|Not Supported|Unknown Error|Requested functionality has been deprecated|GPU is lost|Insufficient Permissions)\]?$", re.I)
_UNIT = re.compile(r"^(-?[0-9.]+)\s*(%|MiB|W|MHz|C|us|ms)?$")


@dataclass(frozen=True, slots=True)
class GpuTelemetry:
    """One GPU's reading. None means "not reported", never zero."""

    index: int
    uuid: str | None = None
    name: str | None = None
    pci_bus_id: str | None = None
    util_gpu: float | None = None
    util_mem: float | None = None
    mem_total_mib: float | None = None
    mem_used_mib: float | None = None
    temp_gpu: float | None = None
    temp_mem: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    clock_sm_mhz: float | None = None
    clock_sm_max_mhz: float | None = None
    clock_event_reasons: int | None = None
    ecc_mode: str | None = None
    ecc_corr_volatile: int | None = None
    ecc_uncorr_volatile: int | None = None
    ecc_corr_aggregate: int | None = None
    ecc_uncorr_aggregate: int | None = None
    remapped_correctable: int | None = None
    remapped_uncorrectable: int | None = None
    remapped_pending: bool | None = None
    remapped_failure: bool | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    missing: tuple[str, ...] = field(default=())  # query fields (or DCGM series) the source lacked
    # Read from Prometheus (dcgm-exporter) only; see cockpit/telemetry/dcgm.py for each.
    mem_free_mib: float | None = None
    xid_last: int | None = None  # the LAST Xid, never a count
    xid_changes: int | None = None  # changes of xid_last within the window
    pcie_replays: float | None = None  # within the window
    nvlink_errors: float | None = None  # within the window, all links
    nvlink_bytes_per_s: float | None = None
    gr_active: float | None = None  # profiling fields, %
    sm_active: float | None = None
    tensor_active: float | None = None
    dram_active: float | None = None
    source: str = "nvidia-smi"
    stale: bool = False  # newest sample older than two scrape intervals
    age_s: float | None = None  # age of the newest sample (Prometheus)
    job_label: str | None = None  # dcgm-exporter's HPC job-mapping label, as exported

    @property
    def clock_events(self) -> tuple[str, ...]:
        """Names of the active clock event (throttle) reasons."""
        m = self.clock_event_reasons or 0
        known = [n for bit, n in CLOCK_EVENT_BITS.items() if m & bit]
        rest = m & ~sum(CLOCK_EVENT_BITS)
        return (*known, *(f"bit_{1 << i:#x}" for i in range(rest.bit_length()) if rest >> i & 1))

    @property
    def throttled(self) -> bool | None:
        """True when power or thermal limits hold the clocks back."""
        return None if self.clock_event_reasons is None else bool(self.clock_event_reasons & THROTTLE_BITS)

    @property
    def pcie_degraded(self) -> bool:
        """Link trained below its maximum width (gen drops at idle are normal power saving)."""
        return bool(self.pcie_width and self.pcie_width_max and self.pcie_width < self.pcie_width_max)


def _value(raw: str, kind: str, source: str, fname: str):
    raw = raw.strip()
    if raw == "" or _NA.match(raw):
        return None
    if kind == "str":
        return raw
    if kind == "bool":
        low = raw.lower()
        if low in ("yes", "true", "enabled", "active"):
            return True
        if low in ("no", "false", "disabled", "not active"):
            return False
        raise ParseError(source, f"{fname}: expected Yes/No, got {raw!r}")
    if kind == "hex":
        try:
            return int(raw, 16) if raw.lower().startswith("0x") else int(raw)
        except ValueError:
            raise ParseError(source, f"{fname}: expected a bitmask, got {raw!r}") from None
    m = _UNIT.match(raw)
    if not m:
        raise ParseError(source, f"{fname}: expected a number, got {raw!r}")
    num = float(m.group(1))
    if kind == "int":
        if not num.is_integer():
            raise ParseError(source, f"{fname}: expected an integer, got {raw!r}")
        return int(num)
    return num


def _header_names(cells: list[str]) -> list[str] | None:
    """Field names if ``cells`` is a CSV header line, else None."""
    names = [re.sub(r"\s*\[[^\]]*\]$", "", c.strip()) for c in cells]
    names = [LEGACY_NAMES.get(n, n) for n in names]
    return names if "index" in names and all(re.fullmatch(r"[A-Za-z0-9_.]+", n) for n in names) else None


def parse_query_gpu(text: str, fields: tuple[str, ...] = QUERY_FIELDS, source: str = "nvidia-smi --query-gpu",
                    warnings: list[str] | None = None) -> tuple[GpuTelemetry, ...]:
    """Parse the CSV into one GpuTelemetry per GPU, ordered as printed.

    Raises ParseError (naming the field and the bad value) for a wrong column
    count, a non-numeric number or a missing GPU index; with a ``warnings``
    list such a row is one warning naming it and the other GPUs' rows stay.
    """
    # nvidia-smi never quotes its CSV cells, so a plain split is the faithful reading
    rows = [[c.strip() for c in line.split(",")] for line in text.splitlines() if line.strip()]
    if not rows:
        return ()
    header = _header_names(rows[0])
    names = header or [LEGACY_NAMES.get(f, f) for f in fields]
    body = rows[1:] if header else rows
    spec = {f: (attr, kind) for f, attr, kind in FIELD_SPECS}
    out = []
    for n, row in enumerate(body, 1):
        try:
            out.append(_row(n, row, names, spec, source))
        except ParseError as exc:
            if warnings is None:
                raise
            at = names.index("index") if "index" in names and len(row) == len(names) else -1
            gpu = row[at].strip()[:8] if at >= 0 else ""
            name = f"GPU{gpu}@line{n}" if gpu.isdecimal() else f"line{n}"
            warnings.append(unread(source, "telemetry row", name, exc.detail))
    return tuple(out)


def _row(n: int, row: list[str], names: list[str], spec: dict, source: str) -> GpuTelemetry:
    if len(row) != len(names):
        raise ParseError(source, f"line {n}: {len(row)} values for {len(names)} fields")
    vals: dict = {}
    for fname, raw in zip(names, row):
        if fname in spec:
            attr, kind = spec[fname]
            vals[attr] = _value(raw, kind, source, fname)
    if vals.get("index") is None:
        raise ParseError(source, f"line {n}: no GPU index")
    missing = tuple(f for f in QUERY_FIELDS if f not in names)
    return GpuTelemetry(missing=missing, **vals)


def query_argv(binary: str = "nvidia-smi", fields: tuple[str, ...] = QUERY_FIELDS) -> list[str]:
    """The argv that produces what :func:`parse_query_gpu` reads."""
    return [binary, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
