"""--slurm-file on the Slurm text operators paste into tickets (tests/data/slurm-text,
SOURCES.md there): sinfo, squeue, scontrol show, sdiag, /metrics and daemon log lines.
Each expected finding was checked by hand against the recording's lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.plugins.api import Severity, verdict
from pluginctx import make_ctx
from cockpit_runbooks import probes_slurm
from cockpit_runbooks.context import RunContext

DATA = Path(__file__).resolve().parents[1] / "data"
TEXT = DATA / "slurm-text"
# /metrics/jobs and /metrics/nodes are recorded for the OpenMetrics reader; --slurm-file refuses them below
OTHER_ENDPOINTS = ("metrics-sckyzo-25.11-jobs.txt", "metrics-sckyzo-25.11-nodes.txt")

CASES = {
    "cluster-22.05-scontrol-show-node04.txt": ("scontrol show node", [
        (Severity.WARN, "1 node(s) IDLE+DRAIN (drained): node04 - reason 'rec: Kill task failed test [root@2026-12-01T19:19:34]'"),
    ]),
    "cluster-22.05-sdiag.txt": ("sdiag", [
        (Severity.OK, 'slurmctld server threads: 3 of 256'),
        (Severity.OK, 'agent queue (RPCs waiting to go out to nodes): 0'),
        (Severity.OK, 'slurmdbd agent queue (messages waiting for slurmdbd): 0'),
        (Severity.OK, 'last backfill cycle took 0.0 s (interval 30 s)'),
        (Severity.OK, 'last backfill cycle 260 s before the statistics were taken, 2 job(s) pending'),
        (Severity.OK, '1044 RPCs from 2 user(s); most from root (1041)'),
    ]),
    "cluster-22.05-sinfo-N-l.txt": ("sinfo -N", [
        (Severity.WARN, "1 node(s) drained (drained): node04 - reason 'rec: Kill task faile'"),
        (Severity.OK, '3 node(s) idle, mixed or allocated (sinfo -N)'),
    ]),
    "cluster-22.05-sinfo-R-none.txt": ("sinfo -R", [
        (Severity.OK, 'sinfo -R lists no node down, drained or failing'),
    ]),
    "cluster-22.05-sinfo-R.txt": ("sinfo -R", [
        (Severity.WARN, "node04: 'rec: Kill task faile' (set by root at 2026-12-01T19:19:34)"),
    ]),
    "cluster-22.05-sinfo-o-pipes.txt": ("sinfo -N", [
        (Severity.OK, '4 node(s) idle, mixed or allocated (sinfo -N)'),
    ]),
    "cluster-22.05-sinfo-o.txt": ("sinfo -N", [
        (Severity.WARN, '1 node(s) drained (drained): node04'),
        (Severity.OK, '3 node(s) idle, mixed or allocated (sinfo -N)'),
    ]),
    "cluster-22.05-sinfo.txt": ("sinfo", [
        (Severity.WARN, '1 node(s) drain (drained): node04'),
        (Severity.OK, '3 node(s) idle, mixed or allocated (sinfo)'),
    ]),
    "cluster-22.05-sprio-l.txt": ("sprio", [
        (Severity.UNKNOWN, 'sprio: 2 row(s)'),
    ]),
    "cluster-22.05-sprio-w.txt": ("sprio", [
        (Severity.UNKNOWN, 'sprio: 0 row(s); weights SITE 1, AGE 1000, FAIRSHARE 1000, JOBSIZE 100, PARTITION 1000, QOS 1000'),
    ]),
    "cluster-22.05-squeue-one-running.txt": ("squeue", [
        (Severity.OK, '1 job(s) running or completing, 0 pending (1 in the table)'),
    ]),
    "cluster-22.05-squeue.txt": ("squeue", [
        (Severity.OK, '1 job(s) running or completing, 2 pending (3 in the table)'),
        (Severity.OK, '1 job(s) pending: Resources'),
        (Severity.WARN, '1 job(s) pending: ReqNodeNotAvail, UnavailableNodes:node01'),
    ]),
    "cluster-22.05-sshare.txt": ("sshare", [
        (Severity.UNKNOWN, '4 association(s); lowest fair share 0.333333 (root root)'),
    ]),
    "metrics-sckyzo-25.11-scheduler.txt": ("/metrics", [
        (Severity.WARN, 'last backfill cycle 5210 s before the statistics were taken, 1 job(s) pending'),
        (Severity.OK, 'slurmctld server threads: 0 of 256'),
        (Severity.OK, 'agent queue (RPCs waiting to go out to nodes): 0'),
        (Severity.OK, 'slurmdbd agent queue (messages waiting for slurmdbd): 0'),
        (Severity.OK, 'last backfill cycle took 0.0 s (interval 30 s)'),
    ]),
    "sinfo-Nel-galaxy-gat2016.txt": ("sinfo -N", [
        (Severity.OK, '1 node(s) idle, mixed or allocated (sinfo -N)'),
    ]),
    "sinfo-R-awsome-185-kill-task-failed-EXCERPT.txt": ("sinfo -R", [
        (Severity.WARN, "ip-10-0-1-23: 'Kill task failed' (set by root at 2024-01-25T15:12:23)"),
    ]),
    "sinfo-R-korean-openhpc-guide-lowsocket.txt": ("sinfo -R", [
        (Severity.WARN, "node1: 'Low socket*core*thre' (set by slurm at 2018-02-25T11:45:44)"),
    ]),
    "sinfo-R-unige-3909-baobab-gres.txt": ("sinfo -R", [
        (Severity.WARN, "cpu242: 'issue-5894' (set by root at 2025-04-02T16:01:38)"),
        (Severity.WARN, "cpu319: 'issue-6543' (set by root at 2025-03-24T09:32:28)"),
        (Severity.WARN, "cpu246: 'issue-5958' (set by root at 2024-12-02T09:39:22)"),
        (Severity.WARN, "gpu030: 'gres/gpu GRES core s' (set by slurm at 2025-04-03T15:48:07)"),
        (Severity.WARN, "gpu002: 'gres/gpu count repor' (set by slurm at 2025-04-02T15:47:44)"),
        (Severity.WARN, "gpu[004-009]: 'gres/gpu GRES core s' (set by slurm at 2025-04-03T15:48:07)"),
        (Severity.WARN, "gpu010: 'gres/gpu count repor' (set by slurm at 2025-04-03T15:48:07)"),
        (Severity.WARN, "gpu011: 'gres/gpu GRES core s' (set by slurm at 2025-04-02T15:47:44)"),
        (Severity.WARN, "gpu[013-017,021-026,034-044,046-049]: 'gres/gpu GRES core s' (set by slurm at 2025-04-03T15:48:07)"),
        (Severity.WARN, "gpu[018-020,027-029,031-033,045]: 'gres/gpu GRES core s' (set by slurm at 2025-04-03T15:48:07)"),
    ]),
    "sinfo-aalto-triton-drain-EXCERPT.txt": ("sinfo", [
        (Severity.CRIT, '1 node(s) drain* (not responding): wsm1'),
        (Severity.WARN, '1 node(s) drain (drained): pe3'),
        (Severity.OK, '1 node(s) idle, mixed or allocated (sinfo)'),
    ]),
    "sinfo-galaxy-gat2016.txt": ("sinfo", [
        (Severity.OK, '1 node(s) idle, mixed or allocated (sinfo)'),
    ]),
    "sinfo-hpc02-test-mix.txt": ("sinfo", [
        (Severity.OK, '3 node(s) idle, mixed or allocated (sinfo)'),
    ]),
    "sinfo-lNe-elasticluster-272-EXCERPT.txt": ("sinfo -N", [
        (Severity.CRIT, "1 node(s) down* (not responding): compute001 - reason 'Not responding'"),
        (Severity.CRIT, "1 node(s) down* (not responding): compute002 - reason 'Not responding'"),
        (Severity.CRIT, "1 node(s) down* (not responding): compute003 - reason 'Not responding'"),
        (Severity.CRIT, "1 node(s) down* (not responding): compute004 - reason 'Not responding'"),
    ]),
    "slurmctld-grep-node03-not-responding.log": ("Slurm log", [
        (Severity.CRIT, 'node03 stopped answering slurmctld and was set DOWN'),
    ]),
    "slurmctld-invalid-state-transition-EXCERPT.log": ("Slurm log", [
        (Severity.WARN, 'an update of worker2 from IDLE to RESUME was refused (invalid state transition)'),
    ]),
    "slurmctld-openhpc-115-registration-invalid.log": ("Slurm log", [
        (Severity.WARN, 'slurmctld rejected the registration of alaska-login-0: Invalid argument'),
    ]),
    "slurmctld-parallelcluster-1517-low-real-memory.log": ("Slurm log", [
        (Severity.WARN, 'ip-10-2-1-120 registered 63622 MB, less than its RealMemory=64000: Slurm drains it'),
    ]),
    "slurmctld-parallelcluster-3671-agent-queue.log": ("Slurm log", [
        (Severity.CRIT, "slurmctld's queue to slurmdbd holds 25430 messages (limit 50860): slurmdbd is not keeping up"),
    ]),
    "slurmctld-radiasoft-2136-config-differs.log": ("Slurm log", [
        (Severity.WARN, "a node's slurm.conf definition differs from its hardware on the node: Procs=2:4(hw) Boards=1:1(hw) SocketsPerBoard=2:1(hw) CoresPerSocket=1:4(hw) ThreadsPerCore=1:1(hw)"),
    ]),
    "slurmctld-parallelcluster-test-slurm-ranged-not-responding.log": ("Slurm log", [  # one hostlist, two nodes
        (Severity.CRIT, 'q2-st-t2large-1 stopped answering slurmctld and was set DOWN'),
        (Severity.CRIT, 'q2-st-t2large-2 stopped answering slurmctld and was set DOWN'),
    ]),
    "slurmctld-trinity-506-not-responding.log": ("Slurm log", [
        (Severity.CRIT, 'c001 stopped answering slurmctld and was set DOWN'),
        (Severity.CRIT, 'c002 stopped answering slurmctld and was set DOWN'),
    ]),
    "slurmd-awsome-141-pyxis-epilog.log": ("Slurm log", [
        (Severity.WARN, "pyxis epilog error on ip-10-1-101-117: couldn't execute enroot command"),
        (Severity.WARN, 'the epilog of SPANK plugin spank_pyxis.so failed on ip-10-1-101-117: Slurm drains the node'),
    ]),
    "slurmd-awsome-185-pyxis-epilog.log": ("Slurm log", [
        (Severity.WARN, "pyxis epilog error on ip-10-1-74-228: mkdir: cannot create directory '/opt/dlami/nvme/tmp/enroot/data': Permission denied"),
    ]),
    "slurmd-pyxis-123-epilog-EXCERPT.log": ("Slurm log", [
        (Severity.WARN, 'pyxis epilog error on sh02-01n60: child 27187 failed with error code: 1'),
    ]),
    "slurmd-trixie-45-kill-task-failed.log": ("Slurm log", [
        (Severity.WARN, "Kill task failed on cn106: a job's processes did not end after SIGKILL (UnkillableStepTimeout); Slurm drains the node"),
    ]),
    "slurmstepd-curie-gpu003-oom.log": ("Slurm log", [
        (Severity.WARN, 'step 128435.1 had 1 process(es) OOM-killed'),
    ]),
    "slurmstepd-nextflow-5932-oom.log": ("Slurm log", [
        (Severity.WARN, 'step 11300781.0 had 1 process(es) OOM-killed'),
    ]),
    "slurmstepd-plantit-198-time-limit.log": ("Slurm log", [
        (Severity.WARN, 'job 4191701 on c5-1 hit its time limit'),
    ]),
    "slurmstepd-toil-4706-time-limit.log": ("Slurm log", [
        (Severity.WARN, 'job 1449736 on phoenix-07 hit its time limit'),
    ]),
    "slurmstepd-uppmax-rackham-oom.log": ("Slurm log", [
        (Severity.WARN, 'step 45791123.batch had 1 process(es) OOM-killed'),
    ]),
    "slurmstepd-zetta-671-time-limit.log": ("Slurm log", [
        (Severity.WARN, 'job 494583 on ... hit its time limit'),
    ]),
    # round 4 (issues 21/26): public recordings of forms the test cluster cannot show
    "sinfo-o-gcm-20.11.8-pipes-all-fields.txt": ("sinfo", [  # %t drain* and %T drained*: the later column is kept
        (Severity.CRIT, "1 node(s) drained* (not responding): node0201 - reason 'replace'"),
        (Severity.OK, "2 node(s) idle, mixed or allocated (sinfo)"),
    ]),
    "sinfo-o-labshare-114-gres-used-nodelist.txt": ("sinfo", [
        (Severity.UNKNOWN, "sinfo table without a STATE column: 7 row(s) (GRES_USED, NODELIST) recorded, "
                           "node states not judged"),
    ]),
    "sinfo-parallelcluster-node-398-power-save-states.txt": ("sinfo", [  # idle~ is a powered-down cloud node
        (Severity.CRIT, "1 node(s) down# (down): queue1-dy-c-1-1"),
        (Severity.CRIT, "14 node(s) down~ (down): queue1-dy-c-1-[2-15]"),
        (Severity.OK, "45 node(s) idle, mixed or allocated (sinfo)"),
    ]),
    "sinfo-R-ubuntu-slurm-4-prolog-error.txt": ("sinfo -R", [
        (Severity.WARN, "hpc: 'Prolog error' (set by slurm at 2018-05-17T01:05:47)"),
    ]),
    "sprio-w-technotes-6-fairshare-only.txt": ("sprio", [
        (Severity.UNKNOWN, "sprio: 0 row(s); weights SITE 1, FAIRSHARE 100000"),
    ]),
    "sprio-w-jean-zay-doc-74.txt": ("sprio", [
        (Severity.UNKNOWN, "sprio: 0 row(s); weights AGE 10000, FAIRSHARE 100000, QOS 250000"),
    ]),
    "sdiag-json-rivosinc-23.02.4.json": ("sdiag --json", [
        (Severity.OK, "slurmctld server threads: 3 of 256"),
        (Severity.OK, "agent queue (RPCs waiting to go out to nodes): 0"),
        (Severity.OK, "slurmdbd agent queue (messages waiting for slurmdbd): 5"),
        (Severity.OK, "last backfill cycle took 4.1 s (interval 30 s)"),  # bf_cycle_last 4097505 us
        (Severity.OK, "last backfill cycle 30 s before the statistics were taken, 13455 job(s) pending"),
        (Severity.OK, "162322 RPCs from 2 user(s); most from root (141368)"),  # 141368 + 20954 (abdh)
    ]),
    "scontrol-show-node-radiasoft-2136-19.05.8-down-EXCERPT.txt": ("scontrol show node", [
        (Severity.CRIT, "1 node(s) DOWN (down): localhost"),
    ]),
    "scontrol-show-job-goose-slurm-32-running-EXCERPT.txt": ("scontrol show job", [
        (Severity.OK, "1 job(s) RUNNING: 10804568"),
    ]),
    "scontrol-show-job-cg-1578-pending-priority-EXCERPT.txt": ("scontrol show job", [
        (Severity.OK, "1 job(s) pending: Priority"),
    ]),
    "slurmctld-trinity-332-registration-low-cpu.log": ("Slurm log", [  # low socket*core*thread and low cpu: one finding
        (Severity.WARN, "c001 registered a socket*core*thread count of 1, less than slurm.conf's 20: Slurm drains it"),
        (Severity.WARN, "slurmctld rejected the registration of c001: Invalid argument"),
    ]),
    "srun-ubuntu-slurm-4-job-prolog-failed.log": ("Slurm log", [
        (Severity.WARN, "a prolog failed on hpc: Slurm drains the node"),
        (Severity.WARN, "a prolog failed on a node: Slurm drains the node"),  # "Application launch failed: Job prolog failed"
    ]),
    "salloc-hpcfund-69-prolog-failure.log": ("Slurm log", [
        (Severity.WARN, "a prolog failed on k003-006: Slurm drains the node"),
    ]),
    "sinfo-R-Format-citc-terraform-11-low-realmemory.txt": ("sinfo -R", [  # --Format=reason:40,nodelist: no USER
        (Severity.WARN, "compute[001-003]: 'Low RealMemory'"),
    ]),
    "sinfo-citc-terraform-11-drain.txt": ("sinfo", [
        (Severity.WARN, "3 node(s) drain (drained): compute[001-003]"),
    ]),
    "slurmctld-findstring-33323940580-registration-ml0.log": ("Slurm log", [
        (Severity.WARN, "slurmctld rejected the registration of ml0: Invalid argument"),
    ]),
    # sshare at three sites (fair share is policy: recorded, never OK); indented as their docs print them
    "sshare-findstring-21527705462-lewis4-sbox-fairshare-EXCERPT.txt": ("sshare", [
        (Severity.UNKNOWN, "4 association(s); lowest fair share 0.098089 (general-gpu user)"),
    ]),
    "sshare-findstring-49152516688-rpi-cci-one-user.txt": ("sshare", [
        (Severity.UNKNOWN, "1 association(s); lowest fair share 0.639472 (bmhr bmhrkmkh)"),
    ]),
    "sshare-findstring-27457988068-hpceng-account-EXCERPT.txt": ("sshare", [  # a title line above the header
        (Severity.UNKNOWN, "4 association(s); lowest fair share 0.655505 (hpceng labeln)"),
    ]),
    "scontrol-show-node-findstring-986912487-20.11.8-allocated.txt": ("scontrol show node", [
        (Severity.OK, "1 node(s) in service (scontrol show node)"),
    ]),
    "scontrol-show-node-findstring-13216167298-22.05.2-kill-task-failed.txt": ("scontrol show node", [
        (Severity.WARN, "1 node(s) IDLE+DRAIN (drained): localhost - reason 'Kill task failed [root@2024-08-08T19:12:57]'"),
    ]),
    "squeue-findstring-13216167298-blank-line-after-header.txt": ("squeue", [
        (Severity.OK, "0 job(s) running or completing, 1 pending (1 in the table)"),
        (Severity.WARN, "1 job(s) pending: Nodes required for job are DOWN, DRAINED or reserved for jobs in higher "
                        "priority partitions"),
    ]),
    # SckyzO/slurm_exporter's captures of its development clusters (provenance.txt there): `sdiag` and
    # `scontrol show nodes -o` of 24.11.7 and 26.05.2; no backfill cycle ran in either (Total cycles: 0)
    "sdiag-sckyzo-exporter-24.11.7.txt": ("sdiag", [
        (Severity.OK, "slurmctld server threads: 1 of 256"),
        (Severity.OK, "agent queue (RPCs waiting to go out to nodes): 0"),
        (Severity.OK, "slurmdbd agent queue (messages waiting for slurmdbd): 0"),
        (Severity.OK, "162 RPCs from 1 user(s); most from user5 (162)"),
    ]),
    "sdiag-sckyzo-exporter-26.05.2.txt": ("sdiag", [
        (Severity.OK, "slurmctld server threads: 1 of 256"),
        (Severity.OK, "agent queue (RPCs waiting to go out to nodes): 0"),
        (Severity.OK, "slurmdbd agent queue (messages waiting for slurmdbd): 0"),
        (Severity.OK, "193 RPCs from 1 user(s); most from user6 (193)"),
    ]),
    # 2017, spaces not tabs, no epochs in the time lines and no RPC sections: no backfill age, no RPC finding
    "sdiag-sckyzo-exporter-2017-test-data.txt": ("sdiag", [
        (Severity.OK, "slurmctld server threads: 3 of 256"),
        (Severity.OK, "agent queue (RPCs waiting to go out to nodes): 0"),
        (Severity.OK, "slurmdbd agent queue (messages waiting for slurmdbd): 0"),
        (Severity.OK, "last backfill cycle took 1.9 s (interval 30 s)"),  # Last cycle: 1942890 us
    ]),
    "scontrol-show-nodes-o-sckyzo-exporter-24.11.7.txt": ("scontrol show node", [  # IDLE/MIXED+DYNAMIC_NORM
        (Severity.OK, "20 node(s) in service (scontrol show node)"),
    ]),
    "scontrol-show-nodes-o-sckyzo-exporter-26.05.2.txt": ("scontrol show node", [
        (Severity.OK, "20 node(s) in service (scontrol show node)"),
    ]),
    "scontrol-show-node-findstring-44552209976-20.11.0-low-realmemory.txt": ("scontrol show node", [
        (Severity.WARN, "1 node(s) IDLE+DRAIN (drained): cu201 - reason 'Low RealMemory [root@2022-05-18T17:20:20]'"),
    ]),
    # scontrol show job of 19.05/20.02 (the sites' docs: the Version= of a node on the same page)
    "scontrol-show-job-ceres-19.05.5-2935316-running.txt": ("scontrol show job", [
        (Severity.OK, "1 job(s) RUNNING: 2935316"),
    ]),
    "scontrol-show-job-lsu-rostam-20.02.3-7517-running.txt": ("scontrol show job", [
        (Severity.OK, "1 job(s) RUNNING: 7517"),
    ]),
    "scontrol-show-job-bih-20.02.0-225-failed.txt": ("scontrol show job", [  # Reason=NonZeroExitCode, 130:0
        (Severity.WARN, "1 job(s) FAILED: 225"),
    ]),
    # "NtasksPerTRES:0" (a ':' for the '=') as its last line: read, not a reason to lose the job
    "scontrol-show-job-bih-4011580-pending-maintenance.txt": ("scontrol show job", [
        (Severity.WARN, "1 job(s) pending: ReqNodeNotAvail, Reserved for maintenance"),
    ]),
    "scontrol-show-partition-lsu-rostam-20.02.3-EXCERPT.txt": ("scontrol show partition", [
        (Severity.OK, "partition medusa is UP (nodes medusa[00-15])"),
        (Severity.OK, "partition cuda is UP (nodes geev,bahram,reno,diablo,carson)"),
    ]),
    "scontrol-show-reservation-bih-root_13-maint.txt": ("reservations", [  # Flags=MAINT,IGNORE_JOBS,...
        (Severity.OK, "1 reservation(s), 1 for maintenance (MAINT)"),
    ]),
    # sinfo -N -l / -lNe at three more sites (the date line above the header, as sinfo -l prints it)
    "sinfo-N-l-alces-flight-2016.txt": ("sinfo -N", [(Severity.OK, "7 node(s) idle, mixed or allocated (sinfo -N)")]),
    "sinfo-N-l-hopper-2024.txt": ("sinfo -N", [  # 2 allocated, 6 idle
        (Severity.OK, "8 node(s) idle, mixed or allocated (sinfo -N)")]),
    "sinfo-lNe-azhpc-slurm-enroot-2021.txt": ("sinfo -N", [(Severity.OK, "2 node(s) idle, mixed or allocated (sinfo -N)")]),
    # sprio -l: the job's PARTITION and the PARTITION factor, both titled PARTITION; an older -l without it first
    "sprio-l-ufrn-npad.txt": ("sprio", [(Severity.UNKNOWN, "sprio: 24 row(s)")]),
    "sprio-l-findstring-61411903317-unige-bamboo.txt": ("sprio", [(Severity.UNKNOWN, "sprio: 3 row(s)")]),
    "sprio-l-findstring-2134148810-no-partition-column.txt": ("sprio", [(Severity.UNKNOWN, "sprio: 2 row(s)")]),
    # invalid state transitions: "requested" (2018) and "request" (2026) in the same message
    "slurmctld-citc-ansible-3-invalid-state-idle-powered-down.log": ("Slurm log", [
        (Severity.WARN, "an update of compute001 from IDLE~ to RESUME was refused (invalid state transition)"),
        (Severity.OK, "compute001 answers again"),
    ]),
    "slurmctld-nhc-176-invalid-state-maint.log": ("Slurm log", [
        (Severity.WARN, "an update of nid001000 from MAINT to RESUME was refused (invalid state transition)"),
    ]),
    # Kill task failed as slurmstepd writes it into a job's output: "*** JOB J STEPD TERMINATED ON ..."
    "slurmstepd-findstring-58683984331-n-301-kill-task-failed.log": ("Slurm log", [
        (Severity.WARN, "Kill task failed on n-301: a job's processes did not end after SIGKILL (UnkillableStepTimeout); "
                        "Slurm drains the node"),
    ]),
    "slurmstepd-findstring-5691116460-udc-aw29-24b-kill-task-failed.log": ("Slurm log", [
        (Severity.WARN, "job 6847502 on udc-aw29-24b hit its time limit"),
        (Severity.WARN, "Kill task failed on udc-aw29-24b: a job's processes did not end after SIGKILL "
                        "(UnkillableStepTimeout); Slurm drains the node"),
    ]),
    # the same sites' scontrol show node (19.05.5, 20.02.3, 20.02.0 in Version=), all IDLE
    "scontrol-show-node-ceres-19.05.5-idle.txt": ("scontrol show node", [
        (Severity.OK, "1 node(s) in service (scontrol show node)")]),
    "scontrol-show-node-lsu-rostam-20.02.3-idle.txt": ("scontrol show node", [
        (Severity.OK, "1 node(s) in service (scontrol show node)")]),
    "scontrol-show-node-bih-20.02.0-idle.txt": ("scontrol show node", [
        (Severity.OK, "1 node(s) in service (scontrol show node)")]),
    # scontrol -o show reservation, 2016: cnh_omnipath_testing, root_1, flexalloc_moc_20161012 and root_6 are MAINT
    "scontrol-o-show-reservation-findstring-39834655315-2016.txt": ("reservations", [
        (Severity.OK, "5 reservation(s), 4 for maintenance (MAINT)")]),
    "squeue-rancavil-slurm-19.05.txt": ("squeue", [
        (Severity.OK, '1 job(s) running or completing, 0 pending (1 in the table)'),
    ]),
    "squeue-sched-control-two-trays.txt": ("squeue", [
        (Severity.OK, '0 job(s) running or completing, 1 pending (1 in the table)'),
        (Severity.WARN, '1 job(s) pending: Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions'),
    ]),
    "squeue-sinfo-R-two-partitions-EXCERPT.txt": ("squeue", [
        (Severity.OK, '1 job(s) running or completing, 1 pending (2 in the table)'),
        (Severity.WARN, '1 job(s) pending: Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions'),
    ]),
}


async def _records(*paths: Path, node: str | None = None):
    rc = RunContext(make_ctx(config={}), node=node, slurm_files=tuple(str(p) for p in paths))
    return await probes_slurm.slurm_records(rc, {})


# sacct without a JobID column (a table), and -P -n rows under the command line that gave their
# --format list (issue 26 class 11): (kind, rows, the first findings, how many CANCELLED)
SACCT = {
    "cluster-22.05-sacct-Pn-format-above.txt": ("sacct", 13, [
        (Severity.OK, "job 14 completed (exit code 0:0) on node01"),
        (Severity.WARN, "job 15 was cancelled (exit code 0:15) on node01")], 7),
    "cluster-22.05-sacct-Pn-format-space-above.txt": ("sacct", 20, [  # steps too: no -X; JobIDRaw read as JobID
        (Severity.OK, "job 14 completed (exit code 0:0)"), (Severity.WARN, "job 15 was cancelled (exit code 0:15)")], 12),
    "cluster-22.05-sacct-Pn-o-above.txt": ("sacct (no JobID)", 13, [  # -o JobName%20,State,ExitCode
        (Severity.OK, "job row 1 (wrap) completed (exit code 0:0)"),
        (Severity.WARN, "job row 2 (prom-idle) was cancelled (exit code 0:15)")], 7),
    "cluster-22.05-sacct-table-no-jobid.txt": ("sacct (no JobID)", 25, [
        (Severity.OK, "job row 1 (wrap) completed (exit code 0:0)"), (Severity.OK, "job row 2 (batch) completed (exit code 0:0)")], 12),
    "cluster-22.05-sacct-table-no-jobid-X.txt": ("sacct (no JobID)", 13, [
        (Severity.OK, "job row 1 completed (exit code 0:0) on node01"),
        (Severity.WARN, "job row 2 was cancelled (exit code 0:15) on node01")], 7),
    "cluster-22.05-sacct-table-no-jobid-user.txt": ("sacct (no JobID)", 13, [
        (Severity.OK, "job row 1 (wrap) completed (exit code 0:0)"),
        (Severity.WARN, "job row 2 (prom-idle) was cancelled (exit code 0:15)")], 7),
}


@pytest.mark.parametrize("name", sorted(SACCT))
async def test_sacct_without_a_jobid_header(name):
    kind, rows, first, cancelled = SACCT[name]
    res = await _records(TEXT / name)
    assert res.sources == [f"{TEXT / name}: {kind}"]
    assert len(res.findings) == rows and [(f.severity, f.title) for f in res.findings[:2]] == first
    assert sum(f.rule == "slurm.job.cancelled" for f in res.findings) == cancelled


def test_every_text_recording_is_covered():
    names = {p.name for p in TEXT.iterdir() if p.name != "SOURCES.md"}
    assert names == set(CASES) | set(OTHER_ENDPOINTS) | set(SACCT)
    listed = (TEXT / "SOURCES.md").read_text()
    assert all(f"| {n} |" in listed for n in names)


@pytest.mark.parametrize("name", sorted(CASES))
async def test_saved_slurm_text(name):
    kind, expected = CASES[name]
    res = await _records(TEXT / name)
    assert res.sources == [f"{TEXT / name}: {kind}"]
    assert [(f.severity, f.title) for f in res.findings] == expected


async def test_the_causes_are_named():
    res = await _records(TEXT / "sinfo-R-awsome-185-kill-task-failed-EXCERPT.txt")
    assert "UnkillableStepTimeout" in res.findings[0].detail
    res = await _records(TEXT / "scontrol-show-node-findstring-13216167298-22.05.2-kill-task-failed.txt")
    assert "UnkillableStepTimeout" in res.findings[0].detail
    res = await _records(TEXT / "sinfo-lNe-elasticluster-272-EXCERPT.txt")
    assert all(f.detail.startswith("slurmd does not answer slurmctld") for f in res.findings)
    res = await _records(TEXT / "slurmd-awsome-141-pyxis-epilog.log")
    # the six pyxis lines are one finding, with the lines as its evidence
    assert res.findings[0].detail == "6 line(s)" and "Permission denied" in "\n".join(res.findings[0].evidence)


@pytest.mark.parametrize("path, threads, rpcs", [
    # data_parser v0.0.39 (plain numbers), v0.0.41 ({set, infinite, number}), and slurmrestd 22.05's
    # openapi v0.0.38 /diag: the same statistics object in three schemas, read by hand
    ("slurm-text/sdiag-json-rivosinc-23.02.4.json", 3, "162322 RPCs from 2 user(s); most from root (141368)"),
    ("slurm-postmortem/rivosinc-exporter-sdiag-24.05.5-json.json", 2, "29 RPCs from 1 user(s); most from root (29)"),
    ("slurmrestd-22.05/diag.json", 3, "12 RPCs from 2 user(s); most from root (8)"),
    # the test clusters' own sdiag --json with non-zero counters (README.md there): v0.0.42, v0.0.45
    ("slurm-24.11/sdiag-busy.json", 1, "946 RPCs from 1 user(s); most from root (946)"),
    ("slurm-26.05/sdiag-busy.json", 1, "934 RPCs from 1 user(s); most from root (934)"),
])
async def test_sdiag_json_in_each_schema(path, threads, rpcs):
    res = await _records(DATA / path)
    assert res.sources == [f"{DATA / path}: sdiag --json"]
    titles = [f.title for f in res.findings]
    assert titles[0] == f"slurmctld server threads: {threads} of 256" and titles[-1] == rpcs
    assert verdict(res.findings) == Severity.OK


async def test_low_realmemory_without_user_column_names_its_cause():
    res = await _records(TEXT / "sinfo-R-Format-citc-terraform-11-low-realmemory.txt")
    assert "slurmd -C" in res.findings[0].detail
    res = await _records(TEXT / "scontrol-show-node-findstring-44552209976-20.11.0-low-realmemory.txt")
    assert "slurmd -C" in res.findings[0].detail


def test_the_older_registration_wording():
    """proc_req.c in an older Slurm (search index file id 26123659532) writes
    ``node=%s, time=%ld, error=%s``: Slurm's format filled in by hand, not a recording."""
    from cockpit.backends.slurm_logscan import scan_log

    (ev,) = scan_log("error: _slurm_rpc_node_registration node=c12, time=1043, error=Invalid argument").events
    assert ev.title == "slurmctld rejected the registration of c12: Invalid argument"


async def test_the_low_resource_lines_are_one_finding_with_both_lines():
    res = await _records(TEXT / "slurmctld-trinity-332-registration-low-cpu.log")
    assert res.findings[0].detail == "2 line(s)" and "low cpu count (1 < 20)" in res.findings[0].evidence[1]



async def test_one_unreadable_scontrol_record_costs_that_record(tmp_path):
    # the Rostam partitions with one line of medusa's record damaged (no '=' left in it)
    text = (TEXT / "scontrol-show-partition-lsu-rostam-20.02.3-EXCERPT.txt").read_text()
    p = tmp_path / "partitions.txt"
    p.write_text(text.replace("OverTimeLimit=NONE PreemptMode=OFF", "OverTimeLimit NONE PreemptMode OFF", 1))
    res = await _records(p)
    assert [(f.severity, f.title) for f in res.findings] == [
        (Severity.OK, "partition cuda is UP (nodes geev,bahram,reno,diablo,carson)"),
        (Severity.WARN, "partition medusa not understood: line is not Key=Value: 'OverTimeLimit NONE PreemptMode OFF' "
                        "(left out, the others are shown)")]
    p.write_text("PartitionName=x\n   no key here\n")  # no record read at all: refused, saying why
    (f,) = (await _records(p)).findings
    assert f.severity == Severity.UNKNOWN and "line is not Key=Value" in f.title


@pytest.mark.parametrize("name, partitions", [
    ("sprio-l-ufrn-npad.txt", {"intel-512", "cluster"}),
    ("sprio-l-findstring-61411903317-unige-bamboo.txt", {"shared-gp"}),
    ("cluster-22.05-sprio-l.txt", {"gpu"}),
])
def test_sprio_l_keeps_the_jobs_partition_beside_the_partition_factor(name, partitions):
    from cockpit.backends.slurm_textcap import read_capture

    rows = read_capture((TEXT / name).read_text()).rows
    assert {r["PARTITION"] for r in rows} == partitions and all(r["PARTITION_2"].isdigit() for r in rows)

@pytest.mark.parametrize("name", OTHER_ENDPOINTS)
async def test_another_metrics_endpoint_is_refused_by_name(name):
    res = await _records(TEXT / name)
    (f,) = res.findings
    assert f.severity == Severity.UNKNOWN and "looks like another /metrics endpoint" in f.title


async def test_the_metrics_index_is_refused_naming_the_endpoint():
    # GET /metrics of 26.05.5 answers a plain list of its endpoints (tests/data/slurm-26.05)
    res = await _records(DATA / "slurm-26.05" / "metrics-index.txt")
    (f,) = res.findings
    assert f.severity == Severity.UNKNOWN and "index of its /metrics endpoints" in f.title
    assert "ask for /metrics/scheduler" in f.title


@pytest.mark.parametrize("version, pending_dbd", [("22.05", 10), ("24.11", 0), ("26.05", 0)])
async def test_the_test_clusters_busy_sdiag(version, pending_dbd):
    # record-scheduler's runs: backfill ran twice, one job ran; read by hand off each sdiag-busy.txt
    res = await _records(DATA / f"slurm-{version}" / "sdiag-busy.txt")
    titles = [f.title for f in res.findings]
    assert f"slurmdbd agent queue (messages waiting for slurmdbd): {pending_dbd}" in titles
    assert any(t.startswith("last backfill cycle took 0.0 s") for t in titles)
    assert verdict(res.findings) == Severity.OK and len(res.findings) == 6


async def test_a_text_that_is_not_slurm_says_what_it_looked_like(tmp_path):
    smi = DATA / "nvidia-smi" / "query-gpu-h100-idle.csv"
    res = await _records(smi)
    (f,) = res.findings
    first = smi.read_text().splitlines()[0].strip()[:40]
    assert f.severity == Severity.UNKNOWN and "not seff, sacct, sshare, sdiag, sinfo" in f.title
    assert f"it starts {first!r}"[:-1] in f.title


# The test clusters' own outputs (tests/data/slurm-*/README.md): node04 drained with
# "rec: Xid 79 ...", node01-03 in service; both partitions UP.
@pytest.mark.parametrize("version", ["22.05", "24.11", "26.05"])
async def test_test_cluster_scontrol_text(version):
    d = DATA / f"slurm-{version}"
    res = await _records(d / "scontrol-d-show-node.txt")
    assert [(f.severity, f.title.split(" - ")[0]) for f in res.findings] == [
        (Severity.WARN, "1 node(s) IDLE+DRAIN (drained): node04"), (Severity.OK, "3 node(s) in service (scontrol show node)")]
    res = await _records(d / "scontrol-show-partition.txt")
    assert [f.title for f in res.findings] == ["partition gpu is UP (nodes node[01-04])",
                                               "partition debug is UP (nodes node[01-02])"]
    res = await _records(d / "scontrol-d-show-job.txt")
    # the 3-node job pends because node04 is drained: scontrol writes that reason with underscores
    pend = [f for f in res.findings if f.rule == "sched.pending" and f.severity == Severity.WARN]
    assert [f.title for f in pend] == ["1 job(s) pending: Nodes required for job are DOWN, DRAINED or reserved "
                                       "for jobs in higher priority partitions"]


def _sdiag_with(tmp_path: Path, **values: int) -> Path:
    """The 22.05 test cluster's sdiag with some counters raised: the one input here that is not
    as recorded, made from a recording so that every other line stays real."""
    text = (DATA / "slurm-22.05" / "sdiag.txt").read_text()
    labels = {"threads": "Server thread count:  3", "agent": "Agent queue size:     0",
              "dbd": "DBD Agent queue size: 0"}
    for key, v in values.items():
        old = labels[key]
        assert old in text
        text = text.replace(old, old[:-1] + str(v))
    p = tmp_path / "sdiag.txt"
    p.write_text(text)
    return p


async def test_a_recorded_sdiag_is_judged_ok():
    res = await _records(DATA / "slurm-22.05" / "sdiag.txt")
    assert verdict(res.findings) == Severity.OK
    assert {f.rule for f in res.findings} == {"sched.threads", "sched.agent-queue", "sched.dbd-queue", "sched.rpc"}


@pytest.mark.parametrize("values, expected", [
    ({"agent": 20000}, Severity.CRIT), ({"agent": 2000}, Severity.WARN), ({"dbd": 90000}, Severity.CRIT),
    ({"threads": 256}, Severity.CRIT), ({"threads": 256, "agent": 20000, "dbd": 90000}, Severity.CRIT)])
async def test_a_loaded_controller_is_not_ok(tmp_path, values, expected):
    res = await _records(_sdiag_with(tmp_path, **values))
    assert verdict(res.findings) == expected


async def test_recorded_but_not_judged_is_never_ok():
    # sshare is recorded (fair share is policy); alone it must not end OK
    res = await _records(DATA / "slurm-postmortem" / "schedmd-slurm-pr114-sshare-a-EXCERPT.txt")
    assert verdict(res.findings) == Severity.UNKNOWN


def test_sacct_json_exit_status_as_one_word_is_not_spelled_out():
    """23.02's data_parser v0.0.39 gives ``exit_code.status`` as one string, later ones a
    list. No public v0.0.39 recording was found: this fragment has the schema's shape
    (slurmrestd's v0.0.39 OpenAPI: ``status`` a string enum), not a recorded output."""
    from cockpit_runbooks.slurmfiles import _json_jobs

    one = {"jobs": [{"job_id": 7, "state": {"current": "COMPLETED"},
                     "exit_code": {"status": "SUCCESS", "return_code": 0}}]}
    many = {"jobs": [{"job_id": 8, "state": {"current": ["FAILED"]},
                      "exit_code": {"status": ["ERROR"], "return_code": {"set": True, "number": 3}}}]}
    assert _json_jobs(one).jobs[0].exit_code == "SUCCESS 0"
    assert _json_jobs(many).jobs[0].exit_code == "ERROR 3"
