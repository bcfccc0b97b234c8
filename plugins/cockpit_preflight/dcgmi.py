"""Parse the table ``dcgmi diag -r N`` prints (DCGM 3.x and 4.x).

Rows are ``| Name | Result |``; ``|-----  Deployment  ----+---|`` (or ``+-----``)
opens a category. DCGM 3.x writes a status per row (``Pass``, ``Pass - All``,
``Fail - GPU: 0``, a second ``Fail - GPU: 0`` row with an empty name); 4.x writes
the test's overall status, then ``GPU0: Pass`` rows. ``Warning`` and ``Info``
rows carry text wrapped over the following rows with an empty name, cut at the
column width (mid-word when the cell is full). Real outputs: tests/data/dcgmi.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cockpit.plugins.api import ParseError

_CATEGORY = re.compile(r"^[|+]-{3,}\s+(\w[\w ]*?)\s+-+\+-+[|+]$")
_ROW = re.compile(r"^\|(.*?)\|(.*)\|$")
_STATUS = re.compile(r"^(Pass|Fail|Skip|Warn)(?:\s*-\s*(All|GPUs?:\s*([0-9][0-9, ]*)))?$", re.I)
_GPU_STATUS = re.compile(r"^GPU\s*(\d+)\s*:\s*(Pass|Fail|Skip|Warn)$", re.I)
_META = {"dcgm version": "version", "driver version detected": "driver", "gpu device ids detected": "device_ids"}


@dataclass
class DiagTest:
    category: str
    name: str
    overall: str | None = None  # pass, fail, skip, warn
    gpus: dict[str, str] = field(default_factory=dict)  # "0" or "all" -> status
    warnings: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)

    @property
    def statuses(self) -> set[str]:
        return set(self.gpus.values()) | ({self.overall} if self.overall else set())

    def to_dict(self) -> dict:
        return {"category": self.category, "name": self.name, "overall": self.overall, "gpus": dict(self.gpus),
                "warnings": list(self.warnings), "info": list(self.info)}


@dataclass
class DiagRun:
    meta: dict[str, str]
    tests: list[DiagTest]

    def failed(self) -> list[DiagTest]:
        return [t for t in self.tests if "fail" in t.statuses]


def _content(cell: str) -> str:
    """The text of a wrapped cell: DCGM prints " " + a fixed-width slice + "  ", cutting
    the text at that width wherever it falls (mid-word too), so slices join as they are."""
    return cell[1:-2] if len(cell) > 3 else cell.strip()


def _status(test: DiagTest, text: str) -> bool:
    m = _STATUS.match(text)
    if m:
        status = m.group(1).lower()
        if m.group(3):
            for g in re.split(r"[,\s]+", m.group(3).strip()):
                test.gpus[g] = status
        elif m.group(2):
            test.gpus["all"] = status
        elif test.overall is None:
            test.overall = status
        return True
    m = _GPU_STATUS.match(text)
    if m:
        test.gpus[m.group(1)] = m.group(2).lower()
        return True
    return False


def looks_like_diag(text: str) -> bool:
    """Whether ``text`` holds dcgmi diag table rows (a whole table or an excerpt of one)."""
    return any(_CATEGORY.match(ln.rstrip()) or ln.startswith("| Diagnostic") for ln in text.splitlines())


def parse_diag(text: str, source: str = "dcgmi diag") -> DiagRun:
    """Raises ParseError for text without a diagnostic table (dcgmi's own error line
    is named when there is one)."""
    meta: dict[str, str] = {}
    tests: list[DiagTest] = []
    category, test, target = "", None, None  # target: the Warning/Info text being continued
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith("Error:"):
            raise ParseError(source, line)
        m = _CATEGORY.match(line)
        if m:
            category, test, target = m.group(1).strip(), None, None
            continue
        m = _ROW.match(line)
        if not m or set(line) <= set("+-=| "):
            continue
        name, cell = m.group(1).strip(), m.group(2)
        value = cell.strip()
        if name.lower() in ("diagnostic",):
            continue
        if name.lower() in _META:
            meta[_META[name.lower()]] = value
        elif name in ("Warning", "Info"):
            if test is None:
                test = DiagTest(category, "(unnamed)")
                tests.append(test)
            target = test.warnings if name == "Warning" else test.info
            target.append(_content(cell))
        elif name:
            test, target = DiagTest(category, name), None
            tests.append(test)
            _status(test, value)
        elif target is not None:
            target[-1] += _content(cell)
        elif test is not None:
            _status(test, value)
    for t in tests:
        t.warnings[:] = [" ".join(w.split()) for w in t.warnings]
        t.info[:] = [" ".join(w.split()) for w in t.info]
    if not tests and not meta:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise ParseError(source, f"no dcgmi diag table (first line {first[:80]!r})")
    return DiagRun(meta, tests)
