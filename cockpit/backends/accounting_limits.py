"""``scontrol show assoc_mgr`` -> LimitsState: the limits that are set, each with
its current usage. Pure, no I/O; raises only ParseError.

The text (22.05 and 24.11 alike)::

    QOS=gpu8(3)
        GrpTRES=cpu=N(1),mem=N(1000),...,gres/gpu=N(8)
        MaxTRESPU=...
        User Limits
          root(0)
            MaxJobsPU=N(1) MaxJobsAccruePU=N(1) MaxSubmitJobsPU=N(2)
            MaxTRESPU=cpu=N(1),...,gres/gpu=8(8)
    ClusterName=cockpit Account=root UserName=root(0) Partition= Priority=0 ID=2
        GrpJobs=N(1) GrpJobsAccrue=N(2)

A value is ``LIMIT(USED)``; ``N`` means no limit (those are left out).
"""

from __future__ import annotations

import re

from cockpit.errors import ParseError
from cockpit.models.accounting import AssocLimits, Limit, LimitsState, QosLimits

SOURCE = "scontrol show assoc_mgr"
_VALUE = re.compile(r"^(N|-?\d+(?:\.\d+)?)(?:\((-?\d+(?:\.\d+)?)\))?$")
# Keys that hold limits (Grp*, Max*, Min*): others (UsageRaw, SharesRaw/..., Lineage) are not.
_LIMIT_KEY = re.compile(r"^(Grp|Max|Min)[A-Za-z]+$")


def _limits(key: str, value: str) -> list[Limit]:
    """Limits of one ``Key=value`` token that are set."""
    value = value.strip()
    if not value or not _LIMIT_KEY.match(key):
        return []
    if "=" in value:  # a TRES list: name=LIMIT(USED),...
        out = []
        for item in value.split(","):
            name, _, v = item.partition("=")
            m = _VALUE.match(v.strip())
            if m and m.group(1) != "N":
                out.append(Limit(key, name.strip(), float(m.group(1)), _f(m.group(2))))
        return out
    m = _VALUE.match(value)
    if m and m.group(1) != "N":
        return [Limit(key, "", float(m.group(1)), _f(m.group(2)))]
    return []


def _f(v: str | None) -> float | None:
    return None if v is None else float(v)


def _tokens(line: str) -> list[tuple[str, str]]:
    out = []
    for tok in line.split():
        k, eq, v = tok.partition("=")
        if eq:
            out.append((k, v))
    return out


def _name(text: str) -> str:
    return text.split("(", 1)[0].strip()  # root(0) -> root, gpu8(3) -> gpu8


class _Record:
    def __init__(self, kind: str, head: dict[str, str]) -> None:
        self.kind = kind
        self.head = head
        self.limits: list[Limit] = []
        self.per: dict[str, dict[str, list[Limit]]] = {"user": {}, "account": {}}

    def build(self) -> QosLimits | AssocLimits:
        if self.kind == "qos":
            return QosLimits(name=self.head["QOS"], limits=tuple(self.limits),
                             per_user={k: tuple(v) for k, v in self.per["user"].items()},
                             per_account={k: tuple(v) for k, v in self.per["account"].items()})
        return AssocLimits(account=self.head.get("Account", ""), user=_name(self.head.get("UserName", "")),
                           partition=self.head.get("Partition", ""), limits=tuple(self.limits))


def parse_assoc_mgr(text: str, source: str = SOURCE) -> LimitsState:
    """QOS and association records with their set limits. Raises ParseError for a
    record header that is neither ``QOS=`` nor ``ClusterName=``."""
    if not isinstance(text, str):
        raise ParseError(source, f"expected text, got {type(text).__name__}")
    recs: list[_Record] = []
    cur: _Record | None = None
    section, owner = "", ""
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            section, owner = "", ""
            head = dict(_tokens(line))
            if line.startswith("QOS="):
                cur = _Record("qos", {"QOS": _name(head["QOS"])})
                recs.append(cur)
            elif line.startswith("ClusterName="):
                cur = _Record("assoc", head)
                recs.append(cur)
            elif "=" in line:
                raise ParseError(source, f"unknown record: {line[:60]!r}")
            else:
                cur = None  # "QOS Records", "Current Association Manager state", "No ... cached"
            continue
        if cur is None:
            continue
        stripped = line.strip()
        if stripped in ("User Limits", "Account Limits"):
            section, owner = stripped.split()[0].lower(), ""
            continue
        if section and "=" not in stripped:
            owner = _name(stripped)
            continue
        found = [lim for k, v in _tokens(stripped) for lim in _limits(k, v)]
        if section and owner:
            cur.per[section].setdefault(owner, []).extend(found)
        else:
            cur.limits.extend(found)
    built = [r.build() for r in recs]
    return LimitsState(qos=tuple(b for b in built if isinstance(b, QosLimits)),
                       assocs=tuple(b for b in built if isinstance(b, AssocLimits)))
