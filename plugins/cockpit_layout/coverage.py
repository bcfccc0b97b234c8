"""Where the layout's NVLink domains came from, and how much of the plan they cover.

Every layout verdict states it: ``topo -m`` (a recorded matrix), ``config``
(``--nvlink-domain-size`` / ``nvlink_domain_size``), ``block`` (an NVL72-style
topology block) or ``assumed`` (nothing said: one domain per node). A matrix
that names fewer GPUs than a node of the plan holds is a WARN: the GPUs without
a column were assumed to share GPU0's domain. An excerpt that cuts rows is read
from the columns of the rows it has (the matrix is symmetric); only a link no
row shows (both GPUs' rows missing or cut short) stays unknown, and where its
two GPUs fell into different domains (the link could join them) that is a WARN.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cockpit.plugins.api import Finding, Severity

from .alloc import TopoMatrix


@dataclass(frozen=True)
class DomainSource:
    kind: str  # topo -m | config | block | assumed
    topo: TopoMatrix | None = None
    size: int | None = None  # GPUs per domain when from config

    def to_dict(self, gpus_per_node: int) -> dict[str, Any]:
        d: dict[str, Any] = {"source": self.kind, "gpus_per_node": gpus_per_node}
        if self.topo is not None:
            d.update(gpus_covered=len(self.topo.gpus), rows=len(self.topo.rows), nvlink=self.topo.nvlink,
                     links=list(self.topo.links), domains={str(g): dom for g, dom in self.topo.domains.items()})
        if self.size:
            d["domain_size"] = self.size
        return d


def describe(src: DomainSource, gpus_per_node: int) -> str:
    """One sentence: where the NVLink domains came from and what they cover."""
    if src.kind == "topo -m" and src.topo is not None:
        t = src.topo
        n = len(set(t.domains.values()))
        kind = f"{'/'.join(t.links)} links" if t.nvlink else "no NVLink (PCIe only): every GPU is its own domain"
        rows = (f", {len(t.rows)} of {len(t.gpus)} rows in the excerpt (the others read from its columns)"
                if len(t.rows) < len(t.gpus) else "")
        return f"NVLink domains from topo -m: {len(t.gpus)} GPU(s) in {n} domain(s), {kind}{rows}"
    if src.kind == "config":
        return f"NVLink domains from config: {src.size} GPUs per domain"
    if src.kind == "block":
        return "NVLink domains from the topology: one domain per block (nvlink_spans_block)"
    return f"NVLink domains assumed: one per node of {gpus_per_node} GPUs (no --topo-m, no nvlink_domain_size)"


def coverage_findings(src: DomainSource, gpus_per_node: int) -> list[Finding]:
    """The statement (OK) and, when a topo -m covers fewer GPUs than the plan, a WARN."""
    out = [Finding(Severity.OK, describe(src, gpus_per_node), "nvlink-domains")]
    if src.kind == "topo -m" and src.topo is not None and len(src.topo.gpus) < gpus_per_node:
        missing = gpus_per_node - len(src.topo.gpus)
        out.append(Finding(Severity.WARN, f"topo -m covers {len(src.topo.gpus)} GPU(s) but a node of the plan uses "
                           f"{gpus_per_node}: {missing} GPU(s) were assumed to share GPU0's NVLink domain", "topo-coverage",
                           fix="record `nvidia-smi topo -m` on a node of the same kind as the job's"))
    if src.kind == "topo -m" and src.topo is not None:
        t = src.topo
        # an unknown link matters only where it could join two domains
        open_pairs = [(a, b) for a, b in t.unknown_pairs() if t.domains.get(a) != t.domains.get(b)]
        if open_pairs:
            names = ", ".join(dict.fromkeys(f"GPU{g}" for pair in open_pairs for g in pair))
            out.append(Finding(Severity.WARN, f"topo -m excerpt has {len(t.rows)} of {len(t.gpus)} rows: the links among "
                               f"{names} (no row shows them) are unknown and were taken as none", "topo-excerpt",
                               fix="record the whole `nvidia-smi topo -m` matrix"))
    return out


def ignored_findings(ignored: tuple[str, ...]) -> list[Finding]:
    """The keys and flags the check did not read, listed (never dropped silently)."""
    if not ignored:
        return []
    return [Finding(Severity.OK, f"{len(ignored)} input key(s) or flag(s) not used by the layout check", "inputs-ignored",
                    evidence=tuple(ignored))]
