"""Where a job's output is (issue 16, item 8): Slurm's default when squeue names no
path, patterns expanded, and a "/dev/null" checked with scontrol, believing only the
default path or /dev/null (a job name may carry "StdOut=/etc/shadow")."""

from __future__ import annotations

import asyncio

import pytest

from cockpit.core.joblog import (
    JobLogError, default_output, expand_pattern, open_job_output, path_for, resolve_path, trusted_output,
)
from cockpit.models import Job
from cockpit.backends.base import Capabilities


def job(**kw):
    base = dict(job_id=62, name="wrap", user="alice", work_dir="/home/alice/run", state="RUNNING", nodes=("node01",))
    base.update(kw)
    return Job(**base)


def test_no_path_is_slurms_default():
    assert path_for(job()) == "/home/alice/run/slurm-62.out"
    assert path_for(job(), stderr=True) == "/home/alice/run/slurm-62.out"
    assert path_for(job(job_id=70, array_job_id=69, array_task_id=3)) == "/home/alice/run/slurm-69_3.out"


def test_no_path_and_no_workdir_says_why():
    with pytest.raises(JobLogError, match="no stdout path and no working directory"):
        path_for(job(work_dir=""))


def test_patterns_expand():
    j = job(job_id=70, array_job_id=69, array_task_id=13, name="train")
    assert expand_pattern("%x-%j.out", j) == "train-70.out"
    assert expand_pattern("%x-%A_%a.out", j) == "train-69_13.out"
    assert expand_pattern("/o/%4j.%N.%b.%u", j) == "/o/0070.node01.3.alice"
    assert expand_pattern("/o/lit\\%j", j) == "/o/lit%j"
    assert path_for(job(stdout="%x-%j.out")) == "/home/alice/run/wrap-62.out"


class Backend:
    def __init__(self, fields):
        self.fields = fields

    def capabilities(self):  # a test double declares what it implements, by type
        return Capabilities.by_type(self, simulated=bool(getattr(self, "simulated", False)))

    async def job_output_paths(self, job_id):
        return self.fields


def test_dev_null_is_checked_with_scontrol():
    j = job(stdout="/dev/null")
    got = asyncio.run(resolve_path(j, Backend({"StdOut": ("/home/alice/run/slurm-62.out",)})))
    assert got == "/home/alice/run/slurm-62.out"


def test_a_hostile_name_is_not_believed():
    j = job(stdout="/dev/null")
    fields = {"StdOut": ("/etc/shadow", "/home/alice/run/slurm-62.out")}
    assert trusted_output(j, fields["StdOut"]) == default_output(j)
    with pytest.raises(JobLogError, match="no path cockpit can trust"):
        asyncio.run(resolve_path(j, Backend({"StdOut": ("/etc/shadow", "/home/alice/custom.log")})))
    with pytest.raises(JobLogError, match="to /dev/null"):
        asyncio.run(resolve_path(j, Backend({"StdOut": ("/etc/shadow", "/dev/null")})))


def test_pending_job_has_no_output_yet():
    with pytest.raises(JobLogError, match="pending: no output yet"):
        open_job_output(job(state="PENDING", nodes=()))
