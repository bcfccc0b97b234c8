"""Turn a parsed run into a verdict: OK / WARN / CRIT / UNKNOWN with the reason.

Rules (thresholds are config keys under ``[plugins.nccl]``):

* a broken launch (duplicated headers, the same rank from several processes) or a
  "Test NCCL failure" line is CRIT and reports no bandwidth at all;
* any ``#wrong`` > 0 or out-of-bounds value is CRIT (data corruption);
* the measured figure is the best busbw (out-of-place or in-place) among the rows
  at the ``top_sizes`` largest message sizes (default 3). busbw only reaches its
  plateau at large messages; taking the best of the top few keeps one noisy row
  from deciding, while a slow link is slow at all of them. "Avg bus bandwidth" is
  a mean over every size, dominated by small ones, so it is never judged;
* measured < ``crit_ratio`` (0.80) x expected is CRIT, < ``warn_ratio`` (0.90) x
  expected is WARN (REFERENCE.md section 1: flag anything below ~80%);
* with no expected figure and no history the verdict is UNKNOWN;
* a single-rank run moves no data between GPUs (busbw is 0 by definition):
  UNKNOWN, nothing to judge, never a CRIT at 0%;
* an output without its "Avg bus bandwidth" line did not run to its end (or
  was cut): its rows are judged, but it never reads OK;
* a log that does not name its collective is judged as printed (busbw is
  already the collective's own figure) and says so; a rank count is inferred
  from it only where busbw/algbw itself exceeds 1, which only all_reduce's does,
  and that estimate is reported as ``nranks_inferred``, never as the count.
"""

from __future__ import annotations

from dataclasses import dataclass

from cockpit.plugins.api import Finding, Severity, worst

from cockpit_nccl.parser import NcclRun, Row

GIB = 1 << 30


def bus_factor(collective: str | None, nranks: int) -> float:
    """busbw / algbw for a collective over ``nranks`` ranks (nccl-tests PERFORMANCE.md)."""
    n = max(int(nranks), 1)
    name = (collective or "all_reduce").lower()
    if name in ("all_reduce", "allreduce"):
        return 2.0 * (n - 1) / n
    if name in ("reduce_scatter", "all_gather", "alltoall", "allgather", "reducescatter"):
        return (n - 1) / n
    return 1.0  # broadcast, reduce, sendrecv, gather, scatter


def infer_nranks(run: NcclRun) -> int | None:
    """Rank count from busbw/algbw when the output lacks device lines (all_reduce only).

    For all_reduce, busbw/algbw = 2(n-1)/n, so n = 2 / (2 - ratio). Only the large
    rows are used: small ones are rounded to 0.00 in the text. A log that does not
    name its collective is taken for all_reduce only when the ratio itself shows
    it: no other collective's factor exceeds 1.
    """
    if run.nranks:
        return run.nranks
    if run.collective not in (None, "all_reduce") or not run.rows:
        return None
    ratios = [
        r.oop.busbw / r.oop.algbw for r in largest_rows(run.rows, 3)
        if r.oop and r.oop.algbw and r.oop.busbw and r.oop.algbw > 1.0
    ]
    if not ratios:
        return None
    ratio = sum(ratios) / len(ratios)
    if not 1.0 <= ratio < 2.0 or run.rows[0].redop == "none":
        return None
    if run.collective is None and ratio < 1.01:
        return None  # factor 1: broadcast, reduce, sendrecv ... or a 2-rank all_reduce; not told apart
    return max(2, round(2.0 / (2.0 - ratio)))


def largest_rows(rows: tuple[Row, ...], top_sizes: int) -> list[Row]:
    """The rows at the ``top_sizes`` largest distinct message sizes."""
    sizes = sorted({r.size for r in rows}, reverse=True)[: max(top_sizes, 1)]
    return [r for r in rows if r.size in sizes]


@dataclass(frozen=True, slots=True)
class Thresholds:
    warn_ratio: float = 0.90
    crit_ratio: float = 0.80
    top_sizes: int = 3
    plateau_bytes: int = 256 << 20  # below this largest size, busbw has likely not plateaued


@dataclass(frozen=True)
class Verdict:
    severity: Severity
    summary: str
    busbw: float | None  # the judged figure, GB/s; None when no bandwidth applies
    size: int | None  # the message size it came from
    expected: float | None
    launch_problem: bool
    findings: tuple[Finding, ...]


def _measured(run: NcclRun, th: Thresholds) -> tuple[float, int]:
    best = max(largest_rows(run.rows, th.top_sizes), key=lambda r: r.busbw)
    return best.busbw, best.size


def _broken(run: NcclRun) -> Verdict | None:
    if run.launch_problems:
        f = Finding(Severity.CRIT, "launch problem: the ranks did not form one job", rule="launch",
                    detail="; ".join(run.launch_problems),
                    fix="launch with srun --mpi=pmix (or mpirun) and an MPI-enabled nccl-tests build")
        return Verdict(Severity.CRIT, "launch problem: " + run.launch_problems[0], None, None,
                       None, True, (f,))
    if run.failures:
        f = Finding(Severity.CRIT, "the test failed", rule="test-failure", evidence=run.failures[:5])
        return Verdict(Severity.CRIT, "test failed: " + run.failures[0][:120], None, None, None,
                       True, (f,))
    return None


def _correctness(run: NcclRun) -> list[Finding]:
    out = []
    bad = [r for r in run.rows if r.wrong > 0]
    if bad:
        out.append(Finding(Severity.CRIT, f"{sum(r.wrong for r in bad)} wrong elements in "
                           f"{len(bad)} row(s)", rule="wrong",
                           evidence=tuple(f"size {r.size}: {r.wrong} wrong" for r in bad[:5]),
                           fix="data corruption: check GPUs (Xid, ECC) and links before any job"))
    if run.out_of_bounds:
        out.append(Finding(Severity.CRIT, f"{run.out_of_bounds} out-of-bounds values",
                           rule="out-of-bounds"))
    return out


def _against(label: str, busbw: float, ref: float, th: Thresholds, rule: str) -> Finding:
    ratio = busbw / ref if ref > 0 else 0.0
    if ratio < th.crit_ratio:
        sev = Severity.CRIT
    elif ratio < th.warn_ratio:
        sev = Severity.WARN
    else:
        sev = Severity.OK
    return Finding(sev, f"busbw {busbw:.1f} GB/s is {ratio:.0%} of {label} {ref:.1f} GB/s",
                   rule=rule, detail=f"WARN below {th.warn_ratio:.0%}, CRIT below {th.crit_ratio:.0%}")


def judge(run: NcclRun, expected: float | None, th: Thresholds = Thresholds(),
          baseline: float | None = None) -> Verdict:
    """Judge a run against an expected busbw (GB/s) and/or the node set's baseline."""
    broken = _broken(run)
    if broken:
        return broken
    if not run.rows:
        return Verdict(Severity.UNKNOWN, "no data rows: the test did not run to the end", None,
                       None, expected, False, ())
    if run.nranks == 1:
        f = Finding(Severity.UNKNOWN, "a single-rank run moves no data between GPUs: nothing to judge", rule="single-rank",
                    fix="run one rank per GPU (-g N, or N MPI ranks)")
        return Verdict(Severity.UNKNOWN, f.title, None, None, expected, False, (f,))
    busbw, size = _measured(run, th)
    findings = _correctness(run)
    if expected:
        findings.append(_against("expected", busbw, expected, th, "expected-busbw"))
    if baseline:
        findings.append(_against("this node set's baseline", busbw, baseline, th, "regression"))
    if max(r.size for r in run.rows) < th.plateau_bytes:
        findings.append(Finding(Severity.OK, f"largest message is only {size} B: busbw may not "
                                "have reached its plateau", rule="plateau",
                                fix="run with -e 8G or more to judge the fabric"))
    judged = [f for f in findings if f.rule != "plateau"]
    if not judged:
        sev = Severity.UNKNOWN
        text = f"busbw {busbw:.1f} GB/s at {size} B; no expected busbw configured and no history"
    else:
        sev = worst(judged)
        # every finding at the worst severity: two CRITs (wrong data and a slow link) are both said
        text = "; ".join(dict.fromkeys(f.title for f in judged if f.severity == sev))
    if run.collective is None:
        text += " (the log does not name its collective)"
    if not run.summary:
        cut = Finding(Severity.UNKNOWN, "the output has no 'Avg bus bandwidth' line: it ends before the test did "
                      "(cut, or killed); judged on the rows present", rule="incomplete")
        findings.append(cut)
        if sev == Severity.OK:
            sev, text = Severity.UNKNOWN, f"{text}; {cut.title}"
    return Verdict(sev, text, busbw, size, expected, False, tuple(findings))
