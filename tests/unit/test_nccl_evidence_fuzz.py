"""Property tests for the NCCL / PyTorch / py-spy evidence (issue #26, round 3), next to
the general ones in test_parsers_fuzz.py (which already cut every recorded PyTorch/NCCL
log after its first problem and insert foreign lines between its records):

* a recorded PyTorch/NCCL log hard-wrapped at any terminal width from 60 to 200
  columns reads as the log itself (the joiner puts the pieces back), so never OK;
* a saved py-spy dump cut anywhere after the start of its last process, or with foreign
  lines inserted between its lines, never reads OK. A cut before the last ``Process``
  line is a whole file of fewer processes (unless the file shows the ``py-spy dump --pid``
  command of the one missing, which is UNKNOWN), so it is left out;
* a table with a busbw column that is not nccl-tests' (NCCL 1.x, DeepSpeed's comms
  logger), cut anywhere or with foreign lines inserted, is refused or never OK.
"""

from __future__ import annotations

import asyncio
import tempfile
import textwrap
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from cockpit.errors import ParseError
from cockpit.plugins.api import Severity, verdict
from fuzzlib import TRUNC, foreign, with_lines

DATA = Path(__file__).resolve().parents[1] / "data"
_TMP = Path(tempfile.mkdtemp(prefix="cockpit-nccl-fuzz-"))


def _verdict(probe_name: str, field: str, text: str) -> Severity:
    from cockpit_runbooks import probes_job
    from cockpit_runbooks.context import RunContext
    from pluginctx import make_ctx

    path = _TMP / "input.txt"
    path.write_text(text)
    rc = RunContext(make_ctx(config={}), **{field: (str(path),)})
    return verdict(asyncio.run(getattr(probes_job, probe_name)(rc, {})).findings)


def _watchdog(text: str) -> Severity:
    return _verdict("watchdog_logs", "job_logs", text)


def _pyspy(text: str) -> Severity:
    return _verdict("pyspy_stacks", "pyspy_files", text)


def _wrap(text: str, width: int) -> str:
    """What a terminal of ``width`` columns shows: every line cut into pieces of ``width``."""
    return "\n".join("\n".join(textwrap.wrap(line, width, drop_whitespace=False, break_long_words=True,
                                             break_on_hyphens=False) or [""]) for line in text.splitlines())


LOGS = [p for p in sorted((DATA / "pytorch-nccl-timeout").glob("*.log")) if _watchdog(p.read_text()) != Severity.OK]
DUMPS = [p for p in sorted((DATA / "pyspy").glob("*.txt")) if _pyspy(p.read_text()) != Severity.OK]
FOREIGN = [DATA / "nccl-tests" / n for n in ("nccl-1.x-readme-single-process-all-reduce-test.txt",
                                             "blog-dgx1-nccl-1.x-all-reduce-test-tabs-EXCERPT.txt",
                                             "deepspeed-issue7019-comms-logger-busbw-avg-table-EXCERPT.txt")]


def test_the_recordings_are_all_judged_above_ok():
    # the properties below start from recordings whose whole verdict is above OK
    assert len(LOGS) == len(list((DATA / "pytorch-nccl-timeout").glob("*.log")))
    assert len(DUMPS) == len(list((DATA / "pyspy").glob("*.txt")))


@TRUNC
@given(st.sampled_from(LOGS), st.integers(60, 200))
def test_a_log_hard_wrapped_at_any_width_reads_as_the_log_itself(path, width):
    # stronger than "never OK": the joiner gives back the very verdict (checked for every width
    # 60-200 of every recording once, 3,948 runs)
    assert _watchdog(_wrap(path.read_text(), width)) == _watchdog(path.read_text()) != Severity.OK


@TRUNC
@given(st.sampled_from(DUMPS), st.floats(0, 1))
def test_a_py_spy_dump_cut_inside_its_last_process_never_reads_ok(path, where):
    text = path.read_text()
    start = text.rfind("\nProcess ") + 1
    assert _pyspy(text[: start + int(where * (len(text) - start))]) != Severity.OK


@TRUNC
@given(st.sampled_from(DUMPS), st.lists(st.tuples(st.integers(0, 200), foreign), min_size=1, max_size=4))
def test_a_py_spy_dump_with_foreign_lines_never_reads_ok(path, inserts):
    assert _pyspy(with_lines(path.read_text(), inserts)) != Severity.OK


@TRUNC
@given(st.sampled_from(FOREIGN), st.floats(0, 1), st.lists(st.tuples(st.integers(0, 40), foreign), max_size=3))
def test_a_foreign_busbw_table_cut_or_mangled_is_never_judged_ok(path, where, inserts):
    from cockpit_nccl.judge import judge
    from cockpit_nccl.parser import parse

    text = path.read_text()
    try:
        run = parse(with_lines(text[: int(where * len(text)) + 1], inserts), path.name)
    except ParseError:
        return
    assert not run.rows and judge(run, expected=1.0).severity != Severity.OK
