"""The CLI backend's accounting capability through a fake Runner that answers with
the outputs recorded on the test cluster: which argv it runs (every sacct query
bounded), the JSON/parsable choice, 22.05's exit-code cross-check, and the
one-line answer where slurmdbd is not configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.backends.accounting import JobQuery
from cockpit.backends.slurm_cli import SlurmCliBackend
from cockpit.runner import CommandResult

DATA = Path(__file__).resolve().parents[1] / "data"
NOW = 1_796_114_300.0


class Answers:
    """A Runner: the first rule whose words all appear in argv answers (stdout, rc, stderr)."""

    description = "fake"

    def __init__(self, rules):
        self.rules = rules
        self.calls: list[tuple[str, ...]] = []

    async def run(self, argv, *, timeout=None, stdin=None):
        argv = tuple(argv)
        self.calls.append(argv)
        for words, (out, rc, err) in self.rules:
            if all(any(w == a or a.startswith(w) for a in argv) for w in words):
                return CommandResult(argv, rc, out.encode() if isinstance(out, str) else out, err.encode())
        raise AssertionError(f"unexpected command {argv}")


def recorded(version: str, name: str) -> bytes:
    return (DATA / f"slurm-{version}" / "accounting" / name).read_bytes()


def backend(version: str, extra=()):
    rules = list(extra) + [
        (("scontrol", "config"), (recorded(version, "scontrol-show-config.txt"), 0, "")),
        (("sacct", "--json"), (recorded(version, "sacct-X.json"), 0, "")),
        (("sacct", "JobID,ExitCode,DerivedExitCode,State"), (_exit_fields(version), 0, "")),
        (("sacct", "--parsable2"), (recorded(version, "sacct-X.txt"), 0, "")),
        (("sacctmgr", "event"), (recorded(version, "sacctmgr-events.txt"), 0, "")),
    ]
    runner = Answers(rules)
    b = SlurmCliBackend(runner)
    return b, runner


def _exit_fields(version: str) -> bytes:
    from cockpit.backends.accounting_text import SACCT_FIELDS

    out = []
    for line in recorded(version, "sacct-X.txt").decode().splitlines():
        f = dict(zip(SACCT_FIELDS, line.split("|", len(SACCT_FIELDS) - 1)))
        out.append("|".join((f["JobID"], f["ExitCode"], f["DerivedExitCode"], f["State"])))
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize("version", ["22.05", "24.11"])
async def test_history_query_is_bounded_and_exit_codes_are_right(version):
    b, runner = backend(version)
    acct = await b.capabilities().accounting.accounting()
    acct.clock = lambda: NOW
    answer = await acct.jobs(JobQuery(start=int(NOW) - 86400))
    fail = [j for j in answer.items if j.name == "rec-acct-fail"][-1]
    assert fail.state == "FAILED" and fail.exit_code == 3
    sacct = [c for c in runner.calls if "sacct" in c]
    for argv in sacct:
        assert "-S" in argv and argv[argv.index("-S") + 1] == "now-86400seconds"
        assert "-X" in argv and any(a.startswith("--state=") for a in argv)
        assert not any(a in ("-j", "--jobs") for a in argv)
    json_call = next(c for c in sacct if "--json" in c)
    assert json_call[:2] != ("env", "SLURM_TIME_FORMAT=%s")  # 22.05's --json cannot read its own %s times
    # 22.05 needs the cross-check (two queries, two costs); 24.11's JSON is right alone.
    assert len(answer.costs) == (2 if version == "22.05" else 1)
    assert answer.costs[0].bounds == ("window 1 d", "-X", "9 states")


async def test_parsable_when_sacct_has_no_json():
    b, runner = backend("24.11", extra=[(("sacct", "--json"), ("", 1, "sacct: unrecognized option '--json'"))])
    acct = await b.capabilities().accounting.accounting()
    answer = await acct.jobs(JobQuery(start=int(NOW) - 3600))
    assert acct.use_json is False and any(j.name == "rec-acct-timeout" for j in answer.items)
    parsable = runner.calls[-1]
    assert parsable[:2] == ("env", "SLURM_TIME_FORMAT=%s") and "--parsable2" in parsable


async def test_node_events_argv():
    b, runner = backend("22.05")
    acct = await b.capabilities().accounting.accounting()
    acct.clock = lambda: NOW
    answer = await acct.node_events("node03", int(NOW) - 14 * 86400)
    assert [e.reason for e in answer.items][-2:] == ["rec: Xid 79 GPU has fallen off the bus", "rec: Xid 79 again"]
    assert "nodes=node03" in runner.calls[-1] and "start=now-1209600seconds" in runner.calls[-1]


async def test_without_slurmdbd_accounting_is_none_and_says_why():
    config = recorded("22.05", "scontrol-show-config.txt").decode().replace(
        "accounting_storage/slurmdbd", "accounting_storage/none")
    b, runner = backend("22.05", extra=[(("scontrol", "config"), (config, 0, ""))])
    assert await b.capabilities().accounting.accounting() is None
    assert b.capabilities().accounting.accounting_why.startswith("accounting is not configured") and "accounting_storage/none" in b.capabilities().accounting.accounting_why
    assert not any("sacct" in " ".join(c) for c in runner.calls)
    assert await b.capabilities().scheduling.scheduling() is not None  # sprio and reservations need no slurmdbd
