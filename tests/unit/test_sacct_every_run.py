"""The utilisation report counts every run of a requeued or preempted job, as
``sacct --parsable2`` counts it by hand, on real Slurm 24.11 outputs of the site
profile's history (tests/data/slurm-24.11/site-history, tests/cluster/site-history).

With its state filter and no ``-D``, 24.11's sacct (--json and --parsable2 alike) gives
such a job's last record only: a CANCELLED one that never started and holds no GPUs,
so the REQUEUED and PREEMPTED runs that held GPUs were missing from the report."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from cockpit.backends import accounting_json as aj
from cockpit.backends import accounting_text as at
from cockpit.backends.accounting import SlurmAccounting
from cockpit.core.utilization import compute, utilization
from cockpit.runner import CommandResult

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm-24.11" / "site-history"


def _history() -> dict[str, str]:
    return dict(line.split(" ", 1) for line in (DATA / "history").read_text().splitlines())


def _gpu_seconds_by_hand(name: str) -> int:
    """gres/gpu x (End - Start) over the raw JobID|AllocTRES|Start|End lines; a run
    that never started (Start "None") counts 0."""
    total = 0
    for line in (DATA / name).read_text().splitlines():
        _job, tres, start, end = line.split("|")
        gpus = sum(int(v) for k, _, v in (i.partition("=") for i in tres.split(",")) if k == "gres/gpu")
        if start.isdigit() and end.isdigit():
            total += gpus * (int(end) - int(start))
    return total


def _window() -> tuple[int, int]:
    ends = [int(e) for line in (DATA / "sacct-X-by-hand.txt").read_text().splitlines()
            if (e := line.rsplit("|", 1)[1]).isdigit()]
    return min(ends) - 3600, max(ends) + 1


class Recorded:
    """A Runner answering sacct with the recording for its -D or not, sacctmgr with nothing."""

    description = "recorded"

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    async def run(self, argv, *, timeout=None, stdin=None):
        argv = tuple(argv)
        self.calls.append(argv)
        if "sacctmgr" in argv:
            return CommandResult(argv, 0, b"", b"")
        name = "sacct-X-D-states" if "-D" in argv else "sacct-X-states"
        name += ".json" if "--json" in argv else ".txt"
        return CommandResult(argv, 0, (DATA / name).read_bytes(), b"")


def test_the_recording_holds_the_runs_that_a_state_query_without_D_loses():
    h = _history()
    last = {r.job_id: r for r in aj.parse_sacct_json(aj.load((DATA / "sacct-X-states.json").read_bytes()))}
    for kind in ("requeue", "preempt"):  # the last record only: never started, no GPUs
        assert last[h[kind]].start_time is None and last[h[kind]].gpus == 0
    runs = aj.parse_sacct_json(aj.load((DATA / "sacct-X-D-states.json").read_bytes()))
    states = {kind: [r.state for r in runs if r.job_id == h[kind]] for kind in ("requeue", "preempt")}
    # the requeued run: ["PENDING", "REQUEUED"] in the JSON, REQUEUED in --parsable2
    assert states == {"requeue": ["REQUEUED", "CANCELLED"], "preempt": ["PREEMPTED", "CANCELLED"]}


@pytest.mark.parametrize("name, parse", [
    ("sacct-X-D-states.json", lambda raw: aj.parse_sacct_json(aj.load(raw))),
    ("sacct-X-D-states.txt", lambda raw: at.parse_sacct_parsable(raw.decode())),
])
def test_every_record_counts_as_parsable2_counts_it_by_hand(name, parse):
    """Each run, each het component, each array task: GPU-seconds equal the hand sum."""
    start, end = _window()
    jobs = parse((DATA / name).read_bytes())
    got = compute(jobs, (), (), (), start, end, account=_history()["account"]).rows[0]
    want = _gpu_seconds_by_hand("sacct-X-by-hand.txt")
    assert want == _gpu_seconds_by_hand("sacct-X-D-by-hand.txt") > 0
    assert got.allocated * 3600 == pytest.approx(want)
    het, array = _history()["het"], _history()["array"]
    ids = {r.job_id for r in jobs}
    assert {f"{het}+0", f"{het}+1", f"{array}_1", f"{array}_2", f"{array}_3"} <= ids


async def test_the_report_asks_for_every_run_and_equals_the_hand_sum():
    start, end = _window()
    runner = Recorded()
    acct = SlurmAccounting(runner, clock=lambda: float(end))
    snap = SimpleNamespace(nodes=(), partitions=(), source="recorded")
    report = await utilization(acct, snap, start, float(end), account=_history()["account"])
    sacct = [c for c in runner.calls if "sacct" in c and "--json" in c]
    assert sacct and all("-D" in c for c in sacct)
    assert report.rows[0].allocated * 3600 == pytest.approx(_gpu_seconds_by_hand("sacct-X-by-hand.txt"))


def test_a_run_recorded_with_fewer_gpus_than_it_asked_is_named_in_a_warning():
    """Slurm 24.11's own record (site profile): a 2-node --gres=gpu:3 job on an untyped and a
    typed node, AllocTRES gres/gpu=3 of ReqTRES gres/gpu=6. The report counts what Slurm
    recorded and says so; the 16 runs of the recorded history, all recorded as asked, give
    no warning."""
    from cockpit.core.utilization import UNDERCOUNT_NAMED, undercounted_gpus
    from cockpit.models.accounting import JobRecord

    lines = (DATA / "untyped-and-typed-alloctres.txt").read_text().splitlines()
    header = lines.index("JobID|State|NodeList|AllocTRES|ReqTRES")
    job_id, state, nodes, alloc, req = lines[header + 1].split("|")
    run = JobRecord(job_id=job_id, job_id_raw=int(job_id), state=state, start_time=1796217414, end_time=1796217416,
                    nodes=("node01", "node02"), alloc_tres=at.parse_tres(alloc), req_tres=at.parse_tres(req))
    (warning,) = undercounted_gpus((run,))
    assert "175 (3 of 6)" in warning and "3 GPU(s) short" in warning and warning.startswith("1 job run(s)")

    history = at.parse_sacct_parsable((DATA / "sacct-X-D-states.txt").read_text())
    assert len(history) == 16 and undercounted_gpus(tuple(history)) == ()
    from dataclasses import replace

    never_ran = replace(run, start_time=None)
    assert undercounted_gpus((never_ran,)) == ()
    many = tuple(replace(run, job_id=str(175 + i)) for i in range(UNDERCOUNT_NAMED + 2))
    (warning,) = undercounted_gpus(many)
    assert warning.startswith(f"{UNDERCOUNT_NAMED + 2} job run(s)") and "and 2 more" in warning
    assert f"{175 + UNDERCOUNT_NAMED} (" not in warning and "21 GPU(s) short" in warning
