"""TRES strings of step usage as sacct prints them (tests/data/sacct-tres, real):
CPU as a duration, sizes with units, bare byte counts, energy; values checked by
hand against the recorded lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.backends.accounting_text import parse_sacct_parsable, parse_tres
from cockpit.errors import ParseError

DATA = Path(__file__).resolve().parents[1] / "data" / "sacct-tres"


def _usage(name: str) -> dict[str, dict[str, float]]:
    """JobID -> the TRES of the second field (``sacct -pno JobID,TRESUsageIn...``)."""
    out = {}
    for line in (DATA / name).read_text().splitlines():
        job, tres, _end = line.split("|")
        out[job] = parse_tres(tres)
    return out


def test_the_test_clusters_step_usage_with_cpu_as_a_duration():
    jobs = {j.job_id: j for j in parse_sacct_parsable((DATA / "testcluster-22.05.8-sacct-steps-cpu-duration.txt").read_text())}
    assert sorted(jobs) == ["17", "19", "6"]
    (step,) = jobs["6"].steps
    assert step.step_id == "batch" and step.total_cpu_s == pytest.approx(0.009)
    assert step.tres_in_max == {"cpu": 0.0, "energy": 0.0, "fs/disk": 19159.0, "mem": 4812 / 1024,
                                "pages": 0.0, "vmem": 7280 / 1024}
    assert jobs["19"].alloc_tres["gres/gpu"] == 24 and jobs["19"].gpus == 24


def test_hours_of_cpu_and_gpu_memory_with_units():
    usage = _usage("curc-alpine-sacct-pno-TRESUsageInMax.txt")
    assert usage["18194943"] == {}
    batch = usage["18194943.batch"]
    assert batch["cpu"] == 56 * 60 + 24
    assert batch["gres/gpumem"] == 38888 and batch["gres/gpuutil"] == 100
    assert batch["mem"] == pytest.approx(10372780 / 1024) and batch["fs/disk"] == 350130624578
    assert usage["18194943.extern"]["mem"] == 0.25


def test_noconvert_prints_bare_bytes_that_are_kept_as_printed():
    batch = _usage("curc-alpine-sacct-pno-TRESUsageInAve-noconvert.txt")["18194943.batch"]
    assert batch["cpu"] == 3384 and batch["gres/gpumem"] == 40777023488 and batch["mem"] == 10621726720


@pytest.mark.parametrize("text, expected", [
    ("cpu=1-02:03:04", {"cpu": 93784.0}),       # days of CPU time
    ("cpu=00:01.234", {"cpu": 1.234}),          # MM:SS.mmm, as TotalCPU prints it
    ("energy=N/A,gres/gpuutil=", {}),           # unset is left out, never 0
    ("gres/gpu:h100=2,mem=1.5G", {"gres/gpu:h100": 2.0, "mem": 1536.0}),
])
def test_every_value_shape(text, expected):
    assert parse_tres(text) == expected


@pytest.mark.parametrize("bad", ["cpu=12:xx:00", "mem=lots", "cpu=inf", "gpu"])
def test_a_bad_value_is_named(bad):
    with pytest.raises(ParseError, match=bad.split("=")[-1][:4] if "=" in bad else "NAME=VALUE"):
        parse_tres(bad)
