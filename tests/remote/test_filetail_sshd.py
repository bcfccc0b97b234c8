"""A remote file followed by byte offset over a real throwaway sshd, and where a
job's output is read (here or on its batch host)."""

from __future__ import annotations

import asyncio
import os

import pytest

from cockpit.core.joblog import JobLogError, JobOutput, reading_node
from cockpit.models import Job
from cockpit.remote.pool import SshPool


@pytest.mark.ssh
async def test_follow_survives_truncation_replacement_and_a_late_file(sshd_farm, farm_settings, tmp_path):
    path = tmp_path / "out.log"
    path.write_text("old 1\nold 2\npart")
    pool = SshPool(farm_settings)
    out = JobOutput(str(path), sshd_farm.names[0], pool)
    seen: list[str] = []
    try:
        assert out.source == f"{sshd_farm.names[0]}:{path}"
        # partial=False: the unfinished last line is left for follow, which yields it whole
        assert await out.tail(5, partial=False) == ["old 1", "old 2"]
        follow = out.follow(interval=0.05)
        with path.open("a") as fh:
            fh.write("ial\nnew \x1b[31m3\n")
        seen += [await follow.__anext__(), await follow.__anext__()]
        path.write_text("after truncation\n")  # shorter than our offset: start again at 0
        seen.append(await follow.__anext__())
        replaced = tmp_path / "next.log"
        replaced.write_text("replaced file, longer than the last one\n")
        os.replace(replaced, path)  # rotated: a new inode, read from its start
        seen.append(await follow.__anext__())
        await follow.aclose()
        late = JobOutput(str(tmp_path / "late.log"), sshd_farm.names[0], pool)
        follow = late.follow(interval=0.05)
        first = asyncio.ensure_future(follow.__anext__())
        # written only once the follower has looked and found nothing: a first look at a
        # file that exists starts at its end (a busy machine's first SSH poll can take >1 s)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while not late._remote.was_missing and loop.time() < deadline:  # noqa: SLF001
            await asyncio.sleep(0.02)
        assert late._remote.was_missing, "the follower never looked at the missing file"  # noqa: SLF001
        (tmp_path / "late.log").write_text("written before we looked again\n")
        seen.append(await asyncio.wait_for(first, 20))
        await follow.aclose()
    finally:
        await out.close()
        await pool.close()
    assert seen == ["partial", "new 3", "after truncation", "replaced file, longer than the last one",
                    "written before we looked again"]


@pytest.mark.ssh
async def test_tail_of_a_missing_remote_file_names_node_and_cause(sshd_farm, farm_settings, tmp_path):
    pool = SshPool(farm_settings)
    out = JobOutput(str(tmp_path / "nope.log"), sshd_farm.names[1], pool)
    try:
        with pytest.raises(JobLogError) as err:
            await out.tail(3)
    finally:
        await pool.close()
    assert f"{sshd_farm.names[1]}:{tmp_path}/nope.log" in str(err.value) and "No such file" in str(err.value)


def test_reading_node_rules(tmp_path):
    here = tmp_path / "here.log"
    here.write_text("x\n")
    running = Job(7, state="RUNNING", nodes=("node03", "node04"), stdout=str(here))
    pending = Job(8, state="PENDING", stdout=str(tmp_path / "later.log"))
    assert reading_node(running, str(here)) is None  # readable here: read here
    assert reading_node(running, str(tmp_path / "elsewhere.log")) == "node03"  # the batch host
    assert reading_node(running, str(here), remote_session=True) == "node03"  # --host: always on the node
    assert reading_node(running, str(here), where="node") == "node03"
    assert reading_node(running, "/nope", where="local") is None
    assert reading_node(pending, pending.stdout) is None  # no node yet: wait for it here
    with pytest.raises(JobLogError, match="no node yet"):
        reading_node(pending, pending.stdout, where="node")
    with pytest.raises(JobLogError, match="'sideways'"):
        reading_node(running, str(here), where="sideways")
