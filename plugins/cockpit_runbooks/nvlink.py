"""``nvidia-smi nvlink --status`` (``nvlink -s``): per-GPU link speeds, and the rules.

Recorded forms (tests/data/nvlink/SOURCES.md): a tab and a space before each
``Link`` line (nvidia-smi itself; pastes show 9 spaces), speeds with or without
decimals, ``<inactive>`` links, an empty output (a GPU without NVLink), and
pasted excerpts with the command echoed and ``...`` where lines were left out::

    GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5269b708-...)
             Link 0: 25 GB/s
             Link 3: <inactive>

A GPU line may carry a note the driver prints for the whole GPU (``NVML: Unable
to retrieve Nvlink information as all links are inActive``); its layout is not in
the recordings, so such a text, after the GPU line or under it, counts as the note.

Rules: a link ``<inactive>`` while others on the node are up is a link down
(WARN; every link of a GPU down is CRIT); a link slower than expected is
degraded (WARN). The expected speed is the configured one, else the speed most
links of the node run at. What was not read is UNKNOWN, never a pass: a line
not understood, ``...`` (lines left out), a GPU with no link line, or a GPU
listing fewer links than its product has (LINKS_BY_PRODUCT) or than the node's
other GPUs (nvidia-smi lists every link, inactive ones included, so fewer means
the text was cut).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from cockpit.plugins.api import ParseError

_GPU = re.compile(r"^GPU (\d+): (.*?)(?: \(UUID: ([^)]*)\)(.*)|())$")
_LINK = re.compile(r"^\s+Link (\d+): (.*?)\s*$")
_SPEED = re.compile(r"^([\d.]+) GB/s$")


@dataclass
class NvlinkGpu:
    index: int
    name: str
    uuid: str | None
    links: dict[int, float | None] = field(default_factory=dict)  # GB/s; None = <inactive>
    note: str = ""  # a whole-GPU message from the driver
    unread: list[str] = field(default_factory=list)  # link lines whose state was not understood
    mig: str = ""  # the driver's "Nvlink queries are not supported for Devices in MIG mode"

    @property
    def inactive(self) -> list[int]:
        return [n for n, s in self.links.items() if s is None]


@dataclass(frozen=True, slots=True)
class LinkProblem:
    gpu: int
    kind: str  # down, slow, unread
    severity: str
    text: str


@dataclass
class NvlinkReport:
    gpus: list[NvlinkGpu]
    elided: bool = False  # a "..." line: the text leaves lines out
    stray: list[str] = field(default_factory=list)  # lines before the first GPU not understood


# NVLinks per GPU of the SXM parts the recordings show (NVIDIA's V100/A100/H100/GB200
# specifications: 6, 12, 18, 18); nvidia-smi lists every one, inactive ones included.
LINKS_BY_PRODUCT = (("V100-SXM", 6), ("A100-SXM", 12), ("H100 80GB HBM3", 18), ("GB200", 18))

_ELISION = re.compile(r"^\s*(\.{3,}|\[\.\.\.\]|…)\s*$")
_ECHO = re.compile(r"^\s*(\$ |# )?nvidia-smi\b")
# A GPU in MIG mode answers no NVLink query (nvidia_gpu_exporter's H100/H200 MIG captures).
_MIG = re.compile(r"not supported for Devices in MIG mode", re.IGNORECASE)


def parse_report(text: str) -> NvlinkReport:
    """GPUs, their links and what was not read. Raises ParseError when the text has
    no ``GPU N:`` line (an empty output is what a GPU without NVLink prints)."""
    rep = NvlinkReport([])
    gpus = rep.gpus
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        if _ELISION.match(line):
            rep.elided = True
            continue
        m = _GPU.match(line)
        if m:
            gpus.append(NvlinkGpu(int(m.group(1)), m.group(2).strip(), m.group(3), note=(m.group(4) or "").strip()))
            continue
        if not gpus:
            if not _ECHO.match(line):
                rep.stray.append(line.strip())
            continue
        lk = _LINK.match(line.replace("\t", "        "))
        if lk:
            state = lk.group(2)
            sp = _SPEED.match(state)
            if sp:
                gpus[-1].links[int(lk.group(1))] = float(sp.group(1))
            elif "inactive" in state.lower():
                gpus[-1].links[int(lk.group(1))] = None
            else:
                gpus[-1].unread.append(line.strip())
        elif _MIG.search(line):
            gpus[-1].mig = line.strip()
        elif "inactive" in line.lower() and not gpus[-1].note:
            gpus[-1].note = line.strip()
        else:
            gpus[-1].unread.append(line.strip())
    if not gpus:
        what = "the output is empty (a GPU without NVLink prints nothing)" if not text.strip() else "no 'GPU N: <name>' line"
        raise ParseError("nvidia-smi nvlink --status", what)
    return rep


def parse_status(text: str) -> list[NvlinkGpu]:
    """GPUs and their links (see parse_report). Raises ParseError."""
    return parse_report(text).gpus


def expected_speed(gpus: list[NvlinkGpu]) -> float | None:
    """The speed most active links run at, or None when no link is up."""
    speeds = Counter(s for g in gpus for s in g.links.values() if s is not None)
    return speeds.most_common(1)[0][0] if speeds else None


def _product_links(name: str) -> int:
    """How many NVLinks a GPU of this product name has; 0 when not known."""
    return next((n for key, n in LINKS_BY_PRODUCT if key in name), 0)


def check(gpus: list[NvlinkGpu] | NvlinkReport, expected_gbps: float | None = None) -> list[LinkProblem]:
    """Links down or slower than expected (configured, else the node's usual speed),
    and what could not be read (UNKNOWN)."""
    rep = gpus if isinstance(gpus, NvlinkReport) else NvlinkReport(list(gpus))
    gpus = rep.gpus
    out: list[LinkProblem] = []
    ref = expected_gbps or expected_speed(gpus)
    any_up = any(s is not None for g in gpus for s in g.links.values())
    counts = Counter(len(g.links) for g in gpus if g.links)
    usual = counts.most_common(1)[0][0] if counts else 0
    if rep.stray:
        out.append(LinkProblem(-1, "unread", "UNKNOWN", f"line not understood: {rep.stray[0][:80]}"))
    if rep.elided:
        out.append(LinkProblem(-1, "elided", "UNKNOWN", "the text leaves lines out ('...'): the GPUs and links "
                                                         "not shown were not checked"))
    for g in gpus:
        label = f"GPU {g.index} ({g.name})"
        if g.unread:
            out.append(LinkProblem(g.index, "unread", "UNKNOWN", f"{label}: line not understood: {g.unread[0][:80]}"))
        if g.mig and not g.links:
            out.append(LinkProblem(g.index, "mig", "UNKNOWN", f"{label}: in MIG mode, NVLink cannot be queried "
                                   f"(nvidia-smi: {g.mig!r}): its links were not judged"))
            continue
        if "inactive" in g.note.lower() and any_up:
            out.append(LinkProblem(g.index, "down", "CRIT", f"{label}: {g.note}"))
        elif not g.links:
            out.append(LinkProblem(g.index, "unread", "UNKNOWN", f"{label}: no link listed"
                                   + (f" ({g.note})" if g.note else "") + ": not checked"))
        elif len(g.links) < (full := _product_links(g.name)):
            out.append(LinkProblem(g.index, "cut", "UNKNOWN", f"{label}: {len(g.links)} link(s) listed of the "
                                   f"{full} this GPU has (text cut?): the rest not checked"))
        elif len(g.links) < usual:
            out.append(LinkProblem(g.index, "cut", "UNKNOWN", f"{label}: {len(g.links)} link(s) listed where the "
                                   f"other GPUs list {usual} (text cut?): the rest not checked"))
        down = g.inactive
        if down and any_up:
            sev = "CRIT" if len(down) == len(g.links) else "WARN"
            out.append(LinkProblem(g.index, "down", sev, f"{label}: {len(down)} of {len(g.links)} NVLinks inactive "
                                                         f"(link {', '.join(map(str, down))})"))
        slow = [n for n, s in g.links.items() if s is not None and ref and s < ref * 0.99]
        if slow:
            out.append(LinkProblem(g.index, "slow", "WARN", f"{label}: {len(slow)} link(s) below {ref:g} GB/s "
                                   f"(link {', '.join(f'{n} at {g.links[n]:g}' for n in slow)})"))
    return out
