"""What ``scontrol show job|node|config`` print for the simulated cluster, in Slurm
24.11's own text layout (the records of tests/data/slurm-24.11: a first line, then
``key=value`` lines indented by three spaces, a line of three spaces and a blank
line after each record; ``show config`` as ``Key = value`` lines).

The values come from the simulation's state, so they agree with squeue, sinfo and
the why-pending view: the fields those views read are the scheduler's own
(accounting.job_fields). Unknown ids get Slurm's error words and exit status 1.
Times are UTC, as everywhere in the demo.
"""

from __future__ import annotations

import time as _time
import zlib
from typing import Any

from cockpit.backends._demo.accounting import job_fields, slurm_duration, tres_mem
from cockpit.backends._demo.state import (CPUS_PER_NODE, FEATURES, GPU_TYPE, MEMORY_MB, MIG_PER_GPU, MIG_PROFILE,
                                          RUNNING, SimJob, node_model)
from cockpit.hostlist import collapse

Answer = tuple[int, bytes, bytes]
CLUSTER = "demo"
CONTROLLER = "slurm-login"  # where Slurm's commands run (the probe runner's node "")
CONTROLLER_ADDR = "10.10.0.1"
CTLD_LOG = "/var/log/slurm/slurmctld.log"
SLURMD_LOG = "/var/log/slurm/slurmd.%n.log"
UID = 1000  # every demo user's uid, as job_fields' UserId says
SLURMD_UP_S = 95  # slurmd registers this long after the node booted
OS = "Linux 6.8.0-51-generic #52~22.04.1-Ubuntu SMP PREEMPT_DYNAMIC Thu Dec  5 13:09:44 UTC 2024"


def iso(t: float | None) -> str:
    return "Unknown" if t is None else _time.strftime("%Y-%m-%dT%H:%M:%S", _time.gmtime(t))


def node_addr(sc: Any, node: str) -> str:
    """The node's address on the management network (its index in the cluster)."""
    i = list(sc.sim.nodes).index(node)
    return f"10.10.{1 + i // 250}.{1 + i % 250}"


def tasks_per_node(j: SimJob) -> int:
    """One task per GPU (as _demo/procs.py runs them); one for a CPU or interactive job."""
    return 1 if j.command == "bash" and not j.script else max(j.gpus_per_node, 1)


def is_batch(j: SimJob) -> bool:
    return bool(j.script) or j.command != "bash"


# -- scontrol show job --------------------------------------------------------------
def _job_head(j: SimJob) -> str:
    head = f"JobId={j.job_id}"
    if j.array_job_id is not None:
        task = str(j.array_task_id) if j.array_task_id is not None else (j.array_task_string() or "").split("%")[0]
        head += f" ArrayJobId={j.array_job_id} ArrayTaskId={task}"
        head += f" ArrayTaskThrottle={j.array_max_running}" if j.array_max_running and j.is_array_remainder else ""
    elif j.het_job_id is not None:
        head += f" HetJobId={j.het_job_id} HetJobOffset={j.het_offset}"
    return f"{head} JobName={j.name}"


def _job_times(j: SimJob, now: int) -> tuple[str, str, str, str, str]:
    """(RunTime, EligibleTime, AccrueTime, EndTime, LastSchedEval)."""
    waits = j.held is not None or j.reason in ("Dependency", "DependencyNeverSatisfied")
    eligible = None if waits else max(j.submit_time, j.begin_time or 0)
    if j.state == RUNNING and j.start_time is not None:
        run, end = now - j.start_time, j.start_time + j.time_limit * 60
    elif j.start_time is not None:
        run, end = (j.end_time or now) - j.start_time, j.end_time
    else:
        run, end = 0, None
    evaluated = j.start_time if j.start_time is not None else now - now % 15
    return slurm_duration(run), iso(eligible), iso(eligible), iso(end), iso(evaluated)


def show_job(j: SimJob, now: int) -> str:
    """One job's record, as plain ``scontrol show job`` prints it (no -d detail lines)."""
    f = job_fields(j)
    runtime, eligible, accrue, end, evaluated = _job_times(j, now)
    tasks = tasks_per_node(j)
    exit_sig = 15 if j.state == "CANCELLED" else 0
    alloc = f["ReqTRES"] if j.nodes else "(null)"
    lines = [_job_head(j),
             f"UserId={f['UserId']} GroupId={j.user}({UID}) MCS_label=N/A",
             f"Priority={0 if j.held else j.priority} Nice=0 Account={f['Account']} QOS={f['QOS']}",
             f"JobState={f['JobState']} Reason={f['Reason']} Dependency={f['Dependency']}",
             f"Requeue=1 Restarts={int('REQUEUED' in j.state_flags)} BatchFlag={int(is_batch(j))} Reboot=0 "
             f"ExitCode={j.exit_code or 0}:{exit_sig}",
             f"RunTime={runtime} TimeLimit={f['TimeLimit']} TimeMin=N/A",
             f"SubmitTime={iso(j.submit_time)} EligibleTime={eligible}",
             f"AccrueTime={accrue}",
             f"StartTime={iso(j.start_time)} EndTime={end} Deadline=N/A",
             f"SuspendTime=None SecsPreSuspend=0 LastSchedEval={evaluated} Scheduler=Main",
             f"Partition={f['Partition']} AllocNode:Sid={CONTROLLER}:{10_000 + zlib.crc32(str(j.job_id).encode()) % 50_000}",
             f"ReqNodeList={f['ReqNodeList']} ExcNodeList={f['ExcNodeList']}",
             f"NodeList={collapse(j.nodes) if j.nodes else ''}"]
    lines += [f"BatchHost={j.nodes[0]}"] if j.nodes else []
    lines += [f"NumNodes={f['NumNodes']} NumCPUs={j.cpus_per_node * j.node_count} NumTasks={tasks * j.node_count} "
              f"CPUs/Task={max(j.cpus_per_node // tasks, 1)} ReqB:S:C:T=0:0:*:*",
              f"ReqTRES={f['ReqTRES']}", f"AllocTRES={alloc}",
              f"Socks/Node=* NtasksPerN:B:S:C={tasks}:0:*:* CoreSpec=*",
              f"MinCPUsNode={j.cpus_per_node} MinMemoryNode={tres_mem(j.mem_per_node)} MinTmpDiskNode=0",
              "Features=(null) DelayBoot=00:00:00",
              "OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)",
              f"Command={j.command or '(null)'}", f"WorkDir={j.work_dir or '/'}"]
    if is_batch(j):
        out = j.stdout or f"{j.work_dir}/slurm-{j.job_id}.out"
        lines += [f"StdErr={out}", "StdIn=/dev/null", f"StdOut={out}"]
    lines += [f"TresPerNode={f['TresPerNode']}"] if f["TresPerNode"] else []
    return lines[0] + "\n" + "".join(f"   {ln}\n" for ln in lines[1:]) + "   \n\n"


def _jobs_named(sim: Any, name: str) -> list[SimJob]:
    """What ``scontrol show job NAME`` lists: the job, every task of an array id
    (``ID_TASK`` for one), every component of a heterogeneous job's leader."""
    base, _, task = name.partition("_")
    if not base.isdecimal() or (task and not task.isdecimal()):
        return []
    want = int(base)
    found = [j for j in sim.jobs.values()
             if j.job_id == want or j.array_job_id == want or (j.het_job_id == want and j.het_offset is not None)]
    if task:
        found = [j for j in found if j.array_job_id == want and j.array_task_id == int(task)]
    return sorted(found, key=lambda j: (j.is_array_remainder, j.array_task_id or 0, j.het_offset or 0, j.job_id))


# -- scontrol show node -------------------------------------------------------------
def _node_state(n: Any) -> str:
    m = node_model(n)
    return "+".join([m.state.upper()] + [flag for flag, on in (("DRAIN", n.drain), ("NOT_RESPONDING", n.not_responding),
                                                              ("REBOOT_REQUESTED", n.reboot is not None)) if on])


def _last_busy(sc: Any, n: Any, now: int) -> int:
    if n.cpu_alloc:
        return now
    ends = [j.end_time for j in sc.sim.jobs.values() if n.name in j.nodes and j.end_time is not None]
    return max(ends, default=n.boot_time + SLURMD_UP_S)


def show_node(sc: Any, name: str, now: int) -> str:
    """One node's record, as ``scontrol show node NAME`` prints it."""
    n = sc.sim.nodes[name]
    used = [i for i, owner in enumerate(n.owners) if owner is not None]
    alloc_cpus, alloc_mem = sum(n.cpu_alloc.values()), sum(n.mem_alloc.values())
    busy_gpus = len(used)
    free = "N/A" if n.down else str(MEMORY_MB - int(alloc_mem * 0.93) - 41_216)
    gpus = f"gres/gpu={busy_gpus}" if busy_gpus else ""
    alloc_tres = ",".join(x for x in (f"cpu={alloc_cpus}" if alloc_cpus else "",
                                      f"mem={tres_mem(alloc_mem)}" if alloc_mem else "", gpus) if x)
    lines = [f"NodeName={name} Arch=x86_64 CoresPerSocket={CPUS_PER_NODE // 4} ",
             f"CPUAlloc={alloc_cpus} CPUEfctv={CPUS_PER_NODE} CPUTot={CPUS_PER_NODE} "
             f"CPULoad={'N/A' if n.down else f'{busy_gpus * 1.01:.2f}'}",
             f"AvailableFeatures={','.join(FEATURES)}", f"ActiveFeatures={','.join(FEATURES)}",
             f"Gres={_gres(n)}", "GresDrain=N/A", f"GresUsed={_gres_used(n, used)}",
             f"NodeAddr={name} NodeHostName={name} Version={slurm_version()}", f"OS={OS} ",
             f"RealMemory={MEMORY_MB} AllocMem={alloc_mem} FreeMem={free} Sockets=2 Boards=1",
             f"State={_node_state(n)} ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
             f"Partitions={','.join(n.partitions)} ",
             f"BootTime={iso(n.boot_time)} SlurmdStartTime={iso(n.boot_time + SLURMD_UP_S)}",
             f"LastBusyTime={iso(_last_busy(sc, n, now))} ResumeAfterTime=None",
             f"CfgTRES=cpu={CPUS_PER_NODE},mem={tres_mem(MEMORY_MB)},billing={CPUS_PER_NODE},"
             f"gres/gpu={n.whole_gpus + n.mig_gpus * MIG_PER_GPU}",
             f"AllocTRES={alloc_tres}", "CurrentWatts=0 AveWatts=0", ""]
    if n.reason:
        lines.append(f"Reason={n.reason} [{n.reason_user or 'root'}@{iso(n.reason_time)}]")
    return lines[0] + "\n" + "".join(f"   {ln}\n" for ln in lines[1:]) + "\n"


def _gres(n: Any) -> str:
    # As Slurm prints them: MIG slices are GPUs of their profile's type, shards a GRES of their own.
    out = [f"gpu:{GPU_TYPE}:{n.whole_gpus}(S:0-1)"]
    if n.mig_gpus:
        out.append(f"gpu:{MIG_PROFILE}:{n.mig_gpus * MIG_PER_GPU}(S:0-1)")
    if n.shards:
        out.append(f"shard:{GPU_TYPE}:{n.shards}(S:0-1)")
    return ",".join(out)


def _gres_used(n: Any, used: list[int]) -> str:
    # In use, then (shards) in use/total per GPU, as tests/data/slurm-gres/frida-* prints it.
    out = [f"gpu:{GPU_TYPE}:{len(used)}(IDX:{_ranges(used) or 'N/A'})"]
    if n.mig_gpus:
        out.append(f"gpu:{MIG_PROFILE}:0(IDX:N/A)")
    if n.shards:
        each = n.shards // n.gpus
        out.append(f"shard:{GPU_TYPE}:0({','.join([f'0/{each}'] * n.gpus)})")
    return ",".join(out)


def _ranges(idx: list[int]) -> str:
    """GPU indexes as Slurm prints them: ``0-3,6``."""
    out: list[str] = []
    for i in idx:
        if out and out[-1].split("-")[-1] == str(i - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        else:
            out.append(str(i))
    return ",".join(out)


def slurm_version() -> str:
    from cockpit.backends.demo import SLURM_VERSION  # the version the demo claims everywhere

    return SLURM_VERSION


# -- scontrol show config -----------------------------------------------------------
def _config_pairs(sc: Any, now: int) -> list[tuple[str, str]]:
    from cockpit.backends._demo.sim import QUEUE_DEPTH

    booted = min(n.boot_time for n in sc.sim.nodes.values()) - 3600
    return [
        ("AccountingStorageEnforce", "associations,limits,qos"), ("AccountingStorageHost", CONTROLLER),
        ("AccountingStoragePort", "6819"), ("AccountingStorageTRES", "cpu,mem,energy,node,billing,gres/gpu,gres/gpuutil"),
        ("AccountingStorageType", "accounting_storage/slurmdbd"), ("AuthType", "auth/munge"),
        ("BOOT_TIME", iso(booted)), ("ClusterName", CLUSTER), ("CredType", "cred/munge"),
        ("FirstJobId", "1"), ("GresTypes", "gpu"), ("JobAcctGatherType", "jobacct_gather/cgroup"),
        ("KillWait", "30 sec"), ("LogTimeFormat", "iso8601_ms"), ("MaxArraySize", "1001"),
        ("MaxJobCount", "200000"), ("MinJobAge", "300 sec"), ("MpiDefault", "pmix"),
        ("NEXT_JOB_ID", str(sc.sim.next_id)), ("PriorityType", "priority/multifactor"),
        ("PriorityWeightAge", "1000"), ("PriorityWeightFairShare", "100000"), ("PriorityWeightJobSize", "10000"),
        ("PriorityWeightPartition", "1000"), ("ProctrackType", "proctrack/cgroup"), ("PrologFlags", "Alloc,Contain"),
        ("ReturnToService", "1"), ("SchedulerParameters", f"default_queue_depth={QUEUE_DEPTH},bf_continue"),
        ("SchedulerType", "sched/backfill"), ("SelectType", "select/cons_tres"),
        ("SelectTypeParameters", "CR_CORE_MEMORY"), ("SlurmUser", "slurm(64030)"),
        ("SlurmctldDebug", "info"), ("SlurmctldHost[0]", f"{CONTROLLER}({CONTROLLER_ADDR})"),
        ("SlurmctldLogFile", CTLD_LOG), ("SlurmctldPort", "6817"), ("SlurmctldTimeout", "120 sec"),
        ("SlurmdDebug", "info"), ("SlurmdLogFile", SLURMD_LOG), ("SlurmdPidFile", "/run/slurmd.pid"),
        ("SlurmdPort", "6818"), ("SlurmdSpoolDir", "/var/spool/slurmd"), ("SlurmdTimeout", "300 sec"),
        ("SlurmdUser", "root(0)"), ("SLURM_CONF", "/etc/slurm/slurm.conf"), ("SLURM_VERSION", slurm_version()),
        ("StateSaveLocation", "/var/spool/slurmctld"), ("TaskPlugin", "task/cgroup,task/affinity"),
        ("TopologyPlugin", "topology/tree"), ("TreeWidth", "16"),
    ]


def show_config(sc: Any, now: int) -> str:
    """The head of ``scontrol show config`` (its keys in Slurm's order, padded as it pads them)."""
    body = "".join(f"{key:<23} = {value}\n" for key, value in _config_pairs(sc, now))
    return f"Configuration data as of {iso(now)}\n{body}\nSlurmctld(primary) at {CONTROLLER} is UP\n"


def scontrol_show(sc: Any, args: list[str], now: int) -> Answer | None:
    """``scontrol show job ID|node NAME|config``; None for anything else."""
    if args == ["show", "config"]:
        return 0, show_config(sc, now).encode(), b""
    if len(args) != 3 or args[0] != "show":
        return None
    kind, name = args[1], args[2]
    if kind == "job":
        jobs = _jobs_named(sc.sim, name)
        if not jobs:
            return 1, b"", b"slurm_load_jobs error: Invalid job id specified\n"
        return 0, "".join(show_job(j, now) for j in jobs).encode(), b""
    if kind == "node":
        if name not in sc.sim.nodes:
            return 1, b"", f"Node {name} not found\n".encode()
        return 0, show_node(sc, name, now).encode(), b""
    return None

