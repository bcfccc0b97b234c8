"""Post-mortem runs and the verdict rule, on real recordings.

A post-mortem (files, no --job) connects to nothing: every probe that has no
file for it is n/a, an action is proposed only once --node names the node, and
the verdict follows CRIT > WARN > UNKNOWN > OK with n/a steps not counted
(docs/verdicts.md)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.plugins.api import NOT_APPLICABLE, Finding, Severity, verdict, worst
from pluginctx import make_ctx
from cockpit_runbooks import load_runbooks
from cockpit_runbooks.context import RunContext
from cockpit_runbooks.engine import PROBES, action_names, run_runbook
from cockpit_runbooks.model import parse_runbook

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
XID79 = str(DATA / "xid-dmesg/pop-os-issue3363-xid79-journalctl-EXCERPT.txt")  # Xid 79 -> RESTART_BM (CRIT)
XID13 = str(DATA / "xid-dmesg/forum-2012-legacy-xid13-no-pci-prefix-syslog-EXCERPT.txt")  # Xid 13 -> RESTART_APP (WARN)
H100_THROTTLE = str(DATA / "nvidia-smi-q/gpud-nvidia-smi-q-535.161.08-8x-h100-80gb-hbm3.txt")  # HW slowdown: WARN
A100_OK = str(DATA / "nvidia-smi-q/telegraf-nvidia-smi-q-x-rtx3080-v13-595.58.03-util65.xml")  # nothing wrong: OK
NVL_OK = str(DATA / "nvlink/gpud-nvlink-status-8x-a100-sxm4-80gb-12-links-25gbps.txt")
NVL_EMPTY = str(DATA / "nvlink/gpud-nvlink-status-a10-no-nvlink-empty.txt")  # empty: nothing to judge, n/a
NVL_DOWN = str(DATA / "nvlink/azhpc-diagnostics-issue73-v100-sxm2-links-3-5-inactive-EXCERPT.txt")
JOB_LOG = str(DATA / "pytorch-nccl-timeout/llamafactory-issue7396-allreduce-watchdog-timeout-EXCERPT.log")
PYSPY = str(DATA / "pyspy/local-py-spy-0.4.3-three-ranks-one-elsewhere.txt")
SEFF = str(DATA / "slurm-postmortem/reportseff-issue16-seff-multinode-EXCERPT.txt")
IB_ROOT = str(DATA / "infiniband")
UNREACHABLE = "unreachable-node-name.invalid"


class RecordingProbes:
    """Probes that remember every call and never answer: a post-mortem must make none."""

    available = True
    description = "recording probes (test)"
    why_not = ""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    async def run(self, node, argv, *, timeout=None, stdin=None):
        self.calls.append(("run", node, tuple(argv)))
        raise AssertionError(f"a post-mortem ran {list(argv)} on {node}")

    async def on_nodes(self, nodes, argv, *, via="auto", timeout=None):
        self.calls.append(("on_nodes", tuple(nodes), tuple(argv)))
        raise AssertionError(f"a post-mortem ran {list(argv)} on {list(nodes)}")

    async def on_slurm_host(self, argv, *, timeout=None):
        self.calls.append(("on_slurm_host", tuple(argv)))
        raise AssertionError(f"a post-mortem ran {list(argv)} on the Slurm host")

    async def close(self):
        return None


def _rc(probes=None, **files) -> RunContext:
    ctx = make_ctx(config={"temp_warn_c": 85.0, "dump_signal": "USR1"}, probes=probes)
    return RunContext(ctx, **files)


def _book(*steps: tuple[str, str]):
    text = 'name = "verdict"\ntarget = "node"\n' + "".join(
        f'\n[[steps]]\nid = "{sid}"\nprobe = "{probe}"\n' for sid, probe in steps)
    return parse_runbook(text, "verdict.toml", PROBES, action_names())


STEPS = (("xid", "kernel_xid"), ("gpu", "gpu_health"), ("nvlink", "nvlink_status"), ("ib", "ib_ports"))


# (files given, status of each step, verdict): the step statuses and severities were read off
# the recordings by hand (see each constant above).
VERDICT_CASES = [
    ({"kernel_logs": (XID79,), "smi_files": (H100_THROTTLE,), "nvlink_files": (NVL_EMPTY,)},
     {"xid": "ran", "gpu": "ran", "nvlink": NOT_APPLICABLE, "ib": NOT_APPLICABLE}, Severity.CRIT),
    # the class that ended UNKNOWN (exit 3): a WARN and a step with nothing to check
    ({"kernel_logs": (XID13,), "nvlink_files": (NVL_EMPTY,)},
     {"xid": "ran", "gpu": NOT_APPLICABLE, "nvlink": NOT_APPLICABLE, "ib": NOT_APPLICABLE}, Severity.WARN),
    # an empty companion file is n/a ("the file is empty"): the healthy nvidia-smi file decides
    ({"smi_files": (A100_OK,), "nvlink_files": (NVL_EMPTY,)},
     {"xid": NOT_APPLICABLE, "gpu": "ran", "nvlink": NOT_APPLICABLE, "ib": NOT_APPLICABLE}, Severity.OK),
    ({"smi_files": (A100_OK,), "nvlink_files": (NVL_OK,)},
     {"xid": NOT_APPLICABLE, "gpu": "ran", "nvlink": "ran", "ib": NOT_APPLICABLE}, Severity.OK),
    # files for none of the steps: every step n/a, nothing judged
    ({"job_logs": (JOB_LOG,)},
     {"xid": NOT_APPLICABLE, "gpu": NOT_APPLICABLE, "nvlink": NOT_APPLICABLE, "ib": NOT_APPLICABLE}, Severity.UNKNOWN),
]


@pytest.mark.parametrize("files,statuses,expected", VERDICT_CASES)
async def test_verdict_across_steps(files, statuses, expected):
    probes = RecordingProbes()
    rep = await run_runbook(_book(*STEPS), _rc(probes, **files), "propose")
    assert {s.id: s.status for s in rep.steps} == statuses
    assert rep.severity == expected and rep.exit_code == int(expected)
    assert all(not s.findings for s in rep.steps if s.status == NOT_APPLICABLE)
    na = sum(1 for v in statuses.values() if v == NOT_APPLICABLE)
    assert f"{na} step(s) n/a" in rep.summary()
    if not rep.findings:
        assert "nothing could be judged" in rep.summary()
    assert probes.calls == []


def test_the_rule_itself():
    f = {s: Finding(s, s.name) for s in Severity}
    assert worst([f[Severity.UNKNOWN], f[Severity.WARN]]) == Severity.WARN
    assert worst([f[Severity.OK], f[Severity.UNKNOWN]]) == Severity.UNKNOWN
    assert worst([f[Severity.WARN], f[Severity.CRIT], f[Severity.UNKNOWN]]) == Severity.CRIT
    assert verdict([f[Severity.OK]]) == Severity.OK
    assert verdict([]) == Severity.UNKNOWN


def _all_files(node=None):
    return dict(node=node, kernel_logs=(XID79,), smi_files=(H100_THROTTLE,), nvlink_files=(NVL_DOWN,),
                job_logs=(JOB_LOG,), pyspy_files=(PYSPY,), slurm_files=(SEFF,), ib_root=IB_ROOT)


@pytest.mark.parametrize("node", [None, UNREACHABLE])
async def test_no_runbook_reaches_a_node_on_files_alone(node):
    books, _ = load_runbooks()
    for name, book in sorted(books.items()):
        probes = RecordingProbes()
        rep = await run_runbook(book, _rc(probes, **_all_files(node)), "propose")
        assert probes.calls == [], name
        assert not any(f.rule == "probe.failed" for f in rep.findings), (name, [f.title for f in rep.findings])
        for s in rep.steps:
            for argv in s.argv:  # an action names the node, never a file
                assert not any("/" in a and a.endswith((".txt", ".log")) for a in argv), (name, argv)
            if node is None and s.status not in ("ran", "skipped"):
                assert s.status == NOT_APPLICABLE, (name, s.id, s.status, s.why)


async def test_post_mortem_proposes_actions_only_for_a_named_node():
    books, _ = load_runbooks()
    rep = await run_runbook(books["gpu-xid"], _rc(RecordingProbes(), kernel_logs=(XID79,)), "propose")
    steps = {s.id: s for s in rep.steps}
    # Xid 79 is RESTART_BM: the reboot step applies, but no node is named
    assert steps["reboot"].status == NOT_APPLICABLE and steps["reboot"].argv == []
    assert "--node" in steps["reboot"].why
    # the title names the GPU; the path is evidence (the input line), not a name
    (xid79,) = [f for f in rep.findings if f.severity == Severity.CRIT]
    assert xid79.title.startswith("GPU 0000:01:00: Xid 79") and XID79 not in xid79.title
    assert rep.inputs == [f"{XID79}: journalctl -k / kern.log"]
    named = await run_runbook(books["gpu-xid"], _rc(RecordingProbes(), node="gpu07", kernel_logs=(XID79,)), "propose")
    steps = {s.id: s for s in named.steps}
    assert steps["reboot"].status == "proposed" and steps["reboot"].argv[0][-1] == "gpu07"
    assert [f.title for f in named.findings if f.severity == Severity.CRIT][0].startswith("gpu07 GPU 0000:01:00: Xid 79")


AER_XID79 = str(DATA / "xid-dmesg/gpu-burn-issue1-aer-surprise-down-then-xid79-EXCERPT.txt")
AER_REL = str(DATA / "xid-dmesg/returnn-issue1500-dmesg-H-relative-stamps-aer-fatal-EXCERPT.txt")


@pytest.mark.parametrize("log,rule,title", [
    # 4 AER lines (Corrected, then Uncorrected (Fatal) Surprise Down), 2 of them "Uncorrected (Fatal)"
    (AER_XID79, "pcie.aer_fatal", "2 uncorrected (fatal) PCIe AER error line(s), 4 AER line(s) in all"),
    # dmesg -H: 4 "can't recover", "Multiple Uncorrected (Fatal) error received", one "PCIe Bus Error"
    (AER_REL, "pcie.aer_fatal", "2 uncorrected (fatal) PCIe AER error line(s), 6 AER line(s) in all"),
    # no AER line, but the GPU fell off the bus (Xid 79): the link is lost, never "no AER errors, OK"
    (XID79, "pcie.fallen_off_bus", "GPU 0000:01:00: the GPU fell off the bus: its PCIe link is lost "
                                   "(no AER line reported it)"),
])
async def test_pcie_on_files_alone_reads_aer_from_the_file_and_never_connects(log, rule, title):
    books, _ = load_runbooks()
    probes = RecordingProbes()
    rep = await run_runbook(books["pcie"], _rc(probes, kernel_logs=(log,)), "propose")
    steps = {s.id: s for s in rep.steps}
    assert steps["links"].status == NOT_APPLICABLE  # no --nvidia-smi file: needs the node
    assert steps["aer"].status == "ran" and [(f.rule, f.title) for f in steps["aer"].findings][0] == (rule, title)
    assert probes.calls == []


async def test_post_mortem_progress_is_not_judged_from_the_copied_file():
    """--job-log without --job: the copy's mtime says nothing about the job."""
    books, _ = load_runbooks()
    rep = await run_runbook(books["hung-job"], _rc(RecordingProbes(), job_logs=(JOB_LOG,)), "propose")
    steps = {s.id: s for s in rep.steps}
    assert steps["progress"].status == NOT_APPLICABLE
    assert not any(f.rule.startswith("progress.") for f in rep.findings)
    # the watchdog step read the log: ranks 0 and 4 timed out on ALLREDUCE SeqNum 1580
    assert steps["watchdog"].status == "ran"
    assert any("SeqNum 1580" in f.title or "1580" in f.detail for f in steps["watchdog"].findings)


def _sitecustomize(tmp_path: Path) -> Path:
    """A sitecustomize that records every name lookup, SSH connect attempt and process
    started (an ssh or srun to the node would be one) of the run."""
    d = tmp_path / "site"
    d.mkdir()
    (d / "sitecustomize.py").write_text(
        "import os, socket\n"
        "_log = os.environ['COCKPIT_TEST_CONNECT_LOG']\n"
        "_real = socket.getaddrinfo\n"
        "def _record(host, *a, **k):\n"
        "    with open(_log, 'a') as fh:\n"
        "        fh.write(f'getaddrinfo {host}\\n')\n"
        "    return _real(host, *a, **k)\n"
        "socket.getaddrinfo = _record\n"
        "import subprocess\n"
        "_popen = subprocess.Popen.__init__\n"
        "def _exec(self, args, *a, **k):\n"
        "    with open(_log, 'a') as fh:\n"
        "        fh.write(f'exec {args!r}\\n')\n"
        "    return _popen(self, args, *a, **k)\n"
        "subprocess.Popen.__init__ = _exec\n"
        "try:\n"
        "    import asyncssh\n"
        "    async def _connect(host, *a, **k):\n"
        "        with open(_log, 'a') as fh:\n"
        "            fh.write(f'asyncssh.connect {host}\\n')\n"
        "        raise OSError('test: no connections')\n"
        "    asyncssh.connect = _connect\n"
        "except ImportError:\n"
        "    pass\n")
    return d


def _program(line: str) -> str:
    """The program's name in an ``exec <argv>`` line of the recorder's log."""
    argv = ast.literal_eval(line.removeprefix("exec "))
    first = argv if isinstance(argv, str) else str(argv[0])
    return os.path.basename(first.split()[0]) if first.split() else ""


def test_headless_post_mortem_with_an_unreachable_node_opens_no_connection(tmp_path):
    log = tmp_path / "connects.log"
    env = dict(os.environ, PYTHONPATH=f"{_sitecustomize(tmp_path)}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               COCKPIT_TEST_CONNECT_LOG=str(log), XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    env.pop("COCKPIT_CONFIG", None)
    for book, files in (("gpu-xid", ["--kernel-log", XID79, "--nvidia-smi", H100_THROTTLE]),
                        ("pcie", ["--kernel-log", XID79]), ("nvlink", ["--nvlink", NVL_DOWN]),
                        ("hung-job", ["--job-log", JOB_LOG, "--py-spy", PYSPY, "--slurm-file", SEFF])):
        # No wall-clock bound (load only lengthens a run): that nothing reached for the node
        # is shown by the log below, of every lookup, SSH connect and process started.
        # The timeout only guards against a hang.
        proc = subprocess.run([sys.executable, "-m", "cockpit.cli", "runbook", "run", book, "--node", UNREACHABLE,
                               *files, "--json"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
        assert "Traceback" not in proc.stderr, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["target"] == f"node {UNREACHABLE}" and doc["exit_code"] == proc.returncode
        assert not any(f["rule"] == "probe.failed" for f in doc["findings"]), doc["findings"]
    lookups = log.read_text().splitlines() if log.exists() else []
    assert not [ln for ln in lookups if UNREACHABLE in ln or ln.startswith("asyncssh")], lookups
    # processes it may start (the pyslurm worker, ctypes' library search) but none that reaches a node
    started = [_program(ln) for ln in lookups if ln.startswith("exec ")]
    assert not [p for p in started if p in ("ssh", "scp", "srun", "salloc", "sbatch")], started
    # the recorder itself works: a lookup of the name in the same environment is logged
    subprocess.run([sys.executable, "-c", f"import socket\ntry: socket.getaddrinfo({UNREACHABLE!r}, 22)\n"
                    "except OSError: pass"], env=env, cwd=ROOT, timeout=60)
    assert f"getaddrinfo {UNREACHABLE}" in log.read_text()


def test_headless_post_mortem_text_names_each_input_once(tmp_path):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    env.pop("COCKPIT_CONFIG", None)
    proc = subprocess.run([sys.executable, "-m", "cockpit.cli", "runbook", "run", "gpu-xid", "--kernel-log", XID13,
                           "--nvidia-smi", A100_OK], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    # Xid 13 -> RESTART_APP is a WARN; the ECC/remap step read the RTX 3080 XML (ECC N/A: not checked)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0].startswith("WARN: gpu-xid files: 0 CRIT, 1 WARN")
    assert proc.stdout.count(XID13) == 1 and proc.stdout.count(A100_OK) == 1
    assert f"input: {A100_OK}: nvidia-smi -q -x (DTD nvsmi_device_v13, driver 595.58.03), 1 GPU(s)" in proc.stdout
