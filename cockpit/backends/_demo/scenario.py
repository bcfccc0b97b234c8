"""The demo cluster's starting point: nodes, partitions, topology and the cases
an operator meets on a bad day (a hung job, an Xid drain, a down node, every
common pending reason, an array job, a heterogeneous job).

Everything is derived from the seed and the start time, so the same arguments
always build the same cluster.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from cockpit.backends._demo.sim import Simulation
from cockpit.backends._demo.state import CPUS_PER_NODE, PENDING, SHARDS_PER_GPU, SimJob, SimNode
from cockpit.errors import UsageError
from cockpit.models import Partition, Switch, Topology

LEAF_SIZE = 8
LEAVES_PER_SPINE = 16
FIRST_JOB_ID = 48_213
MIN_NODES = 32

USERS = (
    ("alice", "nlp"), ("bob", "vision"), ("carol", "nlp"), ("dmitri", "speech"),
    ("erin", "infra"), ("farah", "vision"), ("gwen", "rl"), ("hiro", "nlp"),
    ("ivan", "infra"), ("jun", "rl"),
)
FULL = -1  # "all GPUs of the node"
# name, partition, node counts, GPUs per node, time limit (min), run time range (min), interactive
TEMPLATES = (
    ("bert-large-finetune", "train", (1, 2), (FULL,), 720, (60, 600), False),
    ("resnet50-ablation", "train", (1,), (2, 4), 240, (20, 200), False),
    ("whisper-distill", "train", (2, 4), (FULL,), 1440, (120, 1200), False),
    ("moe-8x7b-sft", "train", (4,), (FULL,), 2880, (240, 2400), False),
    ("vit-h14-pretrain", "train", (2,), (FULL,), 2880, (300, 2400), False),
    ("eval-harness", "train", (1,), (1, 2), 120, (10, 90), False),
    ("nccl-allreduce-test", "debug", (2,), (FULL,), 30, (2, 10), False),
    ("gpu-burn", "debug", (1,), (FULL,), 30, (5, 15), False),
    ("data-prep-tokenize", "debug", (1,), (0,), 60, (5, 40), False),
    ("unit-tests-cuda", "debug", (1,), (1,), 30, (2, 10), False),
    ("jupyter", "interactive", (1,), (1, 2), 480, (30, 240), True),
    ("bash", "interactive", (1,), (1,), 240, (10, 120), True),
)


@dataclass
class Scenario:
    sim: Simulation
    topology: Topology
    hung_job_id: int
    hung_since: int  # when the hung job's stdout last grew
    xid_node: str
    down_node: str
    draining_node: str
    array_job_id: int
    het_job_id: int
    # The node whose NCCL bandwidth is ~30% of its peers' (a degraded IB rail): in the
    # debug partition, where an operator runs benchmarks (dgx051 on the 64-node demo).
    slow_nccl_node: str = ""
    xid_gpu: int = 3  # the GPU index of xid_node that fell off the bus
    straggler_node: str = ""  # the hung job's node whose rank is stuck elsewhere
    straggler_rank: int = 0  # that rank: stuck reading its next batch, not in the all_reduce
    xid_time: int = 0  # when xid_node's GPU fell off the bus (its kernel log's Xid 79)
    # The node whose local NVMe RAID0 (/raid, where /tmp and /scratch point) is slow: one of
    # its eight drives trained at PCIe x1, so the pre-flight storage check names it (dgx003).
    slow_storage_node: str = ""
    # The node with a failed fan: under full load two of its GPUs reach the slowdown
    # temperature and throttle, so the pre-flight burn-in flags it and proposes a drain (dgx002).
    throttled_node: str = ""


def node_names(count: int) -> list[str]:
    width = max(3, len(str(count)))
    return [f"dgx{i:0{width}d}" for i in range(1, count + 1)]


def build_topology(names: list[str]) -> tuple[Topology, dict[str, str]]:
    """Leaf switches of 8 nodes under one spine (or several spines under a core)."""
    leaves = [names[i : i + LEAF_SIZE] for i in range(0, len(names), LEAF_SIZE)]
    width = max(2, len(str(len(leaves))))
    leaf_names = [f"leaf{k:0{width}d}" for k in range(1, len(leaves) + 1)]
    switches = [Switch(name=ln, level=0, nodes=tuple(grp)) for ln, grp in zip(leaf_names, leaves)]
    leaf_of = {n: ln for ln, grp in zip(leaf_names, leaves) for n in grp}
    if len(leaf_names) <= LEAVES_PER_SPINE:
        switches.append(Switch(name="spine", level=1, switches=tuple(leaf_names)))
    else:
        groups = [leaf_names[i : i + LEAVES_PER_SPINE] for i in range(0, len(leaf_names), LEAVES_PER_SPINE)]
        spines = [f"spine{k:02d}" for k in range(1, len(groups) + 1)]
        switches += [Switch(name=s, level=1, switches=tuple(g)) for s, g in zip(spines, groups)]
        switches.append(Switch(name="core", level=2, switches=tuple(spines)))
    return Topology(kind="tree", switches=tuple(switches)), leaf_of


def build_partitions(names: list[str]) -> list[Partition]:
    ntrain = len(names) * 3 // 4
    rest = names[ntrain:]
    inter = rest[len(rest) // 2 :]
    return [
        Partition("train", tuple(names[:ntrain]), "UP", True, 7 * 24 * 60, ntrain * CPUS_PER_NODE),
        Partition("debug", tuple(rest), "UP", False, 120, len(rest) * CPUS_PER_NODE),
        Partition("interactive", tuple(inter), "UP", False, 480, len(inter) * CPUS_PER_NODE),
    ]


def make_job(sim: Simulation, rng: random.Random, tmpl: tuple, submit: int, gpus: int,
             user: tuple[str, str] | None = None) -> SimJob:
    """A job from a template, with its user, size and fate drawn from ``rng``."""
    name, part, counts, per_node, limit, (dmin, dmax), interactive = tmpl
    user_name, account = user or rng.choice(USERS)
    gpn = rng.choice(per_node)
    gpn = gpus if gpn == FULL else min(gpn, gpus)
    fate = rng.random()
    duration = rng.randint(dmin, dmax) * 60 if fate >= 0.04 else None  # None: hits its limit
    job_id = sim.new_id()
    home = f"/home/{user_name}/{name.split('-')[0]}"
    return SimJob(
        job_id=job_id, name=name, user=user_name, account=account, partition=part,
        node_count=rng.choice(counts), gpus_per_node=gpn,
        cpus_per_node=gpn * (CPUS_PER_NODE // gpus) if gpn else 32,
        time_limit=limit, submit_time=submit, duration=duration,
        outcome="FAILED" if fate < 0.12 else "COMPLETED",
        exit_code=rng.choice((1, 2, 137)) if fate < 0.12 else None,
        priority=rng.randint(10_000, 30_000) + (10_000 if interactive else 0),
        work_dir=home,
        command="bash" if interactive else f"{home}/{name}.sbatch",
        stdout="" if interactive else f"{home}/logs/{name}-{job_id}.out",
    )


# Pending jobs per partition at which users stop submitting, per 64 nodes.
QUEUE_CAP = {"train": 30, "debug": 6, "interactive": 3}


def arrivals(sim: Simulation, now: int) -> None:
    """Tick hook: about one new job a minute while that partition's queue is not full."""
    if sim.rng.random() >= 0.25:
        return
    tmpl = sim.rng.choice(TEMPLATES)
    if sim.pending_count(tmpl[1]) >= QUEUE_CAP[tmpl[1]] * max(1, len(sim.nodes) // 64):
        return
    gpus = next(iter(sim.nodes.values())).gpus
    sim.submit(make_job(sim, sim.rng, tmpl, now, gpus))


def build(seed: int, start: int, count: int, gpus: int) -> Scenario:
    """The whole starting cluster at time ``start``. Raises UsageError for a bad size."""
    if count < MIN_NODES:
        raise UsageError(f"demo cluster needs at least {MIN_NODES} nodes, got {count}")
    if not 1 <= gpus <= 64:
        raise UsageError(f"demo GPUs per node must be 1-64, got {gpus}")
    rng = random.Random(seed)
    names = node_names(count)
    topo, leaf_of = build_topology(names)
    parts = build_partitions(names)
    member = {n: tuple(p.name for p in parts if n in p.nodes) for n in names}
    nodes = [
        SimNode(n, member[n], gpus, leaf_of[n], boot_time=start - rng.randint(3, 40) * 86_400)
        for n in names
    ]
    sim = Simulation(nodes, parts, start, rng)
    sim.next_id = FIRST_JOB_ID
    train = list(parts[0].nodes)
    sc = Scenario(sim, topo, 0, start - 2832, train[12], train[len(train) - 9], train[20], 0, 0,
                  slow_nccl_node=parts[1].nodes[2], xid_gpu=min(3, gpus - 1), straggler_node=train[5],
                  straggler_rank=5 * gpus + min(3, gpus - 1), slow_storage_node=train[2],
                  throttled_node=train[1])
    _broken_nodes(sc, start)
    _special_running(sc, start, gpus)
    _fill(sim, rng, start, gpus)
    _special_pending(sc, start, gpus)
    sim.schedule(start)
    sim.arrivals = arrivals
    return sc


def _broken_nodes(sc: Scenario, t0: int) -> None:
    xid = sc.sim.nodes[sc.xid_node]
    xid.drain, xid.reason, xid.reason_user = True, "Xid 79: GPU has fallen off the bus", "root"
    xid.reason_time = t0 - 2 * 3600 - 13 * 60
    sc.xid_time = xid.reason_time - 47  # a health check drained it 47 s after the Xid
    down = sc.sim.nodes[sc.down_node]
    down.down = down.not_responding = True
    down.reason, down.reason_user, down.reason_time = "Not responding", "slurm", t0 - 5 * 3600 - 120
    # Beside the plain nodes, one with MIG slices and one with shards (issue 21, as sites
    # have them): the down node, which no job holds, so the jobs drawn are the same.
    down.mig_gpus = min(2, down.gpus - 1)
    last = sc.sim.nodes[sc.sim.partitions["interactive"].nodes[-1]]
    last.shards = SHARDS_PER_GPU * last.gpus


def _job(sim: Simulation, name: str, user: str, account: str, part: str, nodes: int, gpn: int,
         gpus: int, limit: int, submit: int, duration: int | None, **kw) -> SimJob:
    job_id = kw.pop("job_id", None) or sim.new_id()
    home = f"/home/{user}/{name.split('-')[0]}"
    job = SimJob(
        job_id=job_id, name=name, user=user, account=account, partition=part, node_count=nodes,
        gpus_per_node=gpn, cpus_per_node=gpn * (CPUS_PER_NODE // gpus) if gpn else 32,
        time_limit=limit, submit_time=submit, duration=duration, work_dir=home,
        command=f"{home}/{name}.sbatch", stdout=f"{home}/logs/{name}-{job_id}.out",
    )
    for key, value in kw.items():
        setattr(job, key, value)
    sim.jobs[job.job_id] = job
    return job


def _run(sim: Simulation, job: SimJob, started: int, nodes: list[str] | None = None) -> None:
    placed = nodes or sim.place(job)
    if placed is None:
        # No room at this cluster size: leave this case out.
        sim._unqueue(job)
        del sim.jobs[job.job_id]
        return
    sim.start(job, placed, started)


def _special_running(sc: Scenario, t0: int, gpus: int) -> None:
    sim = sc.sim
    train = list(sim.partitions["train"].nodes)
    hung = _job(sim, "llama-70b-pretrain", "alice", "nlp", "train", 8, gpus, gpus, 7 * 24 * 60,
                t0 - 2 * 86_400 - 8 * 3600, None)
    sim.start(hung, train[:8], t0 - 2 * 86_400 - 7 * 3600 - 13 * 60)
    sc.hung_job_id = hung.job_id
    vit = _job(sim, "vit-h14-pretrain", "dmitri", "speech", "train", 1, gpus, gpus, 2880,
               t0 - 5 * 3600 - 300, 7 * 3600)
    sim.start(vit, [sc.draining_node], t0 - 5 * 3600)
    drn = sim.nodes[sc.draining_node]
    drn.drain, drn.reason, drn.reason_user = True, "BIOS update 2.1.3 (CHG-4821)", "ivan"
    drn.reason_time = t0 - 25 * 60
    het_id = sim.new_id()
    sc.het_job_id = het_id
    learner = _job(sim, "rlhf-ppo", "gwen", "rl", "train", 1, gpus, gpus, 1440, t0 - 3 * 3600 - 60,
                   6 * 3600, job_id=het_id, het_job_id=het_id, het_offset=0)
    actors = _job(sim, "rlhf-ppo", "gwen", "rl", "train", 2, max(gpus // 2, 1), gpus, 1440,
                  t0 - 3 * 3600 - 60, 6 * 3600, het_job_id=het_id, het_offset=1)
    _run(sim, learner, t0 - 3 * 3600)
    _run(sim, actors, t0 - 3 * 3600)
    dep = _job(sim, "resnet152-train", "bob", "vision", "train", 1, gpus, gpus, 240, t0 - 90 * 60,
               120 * 60)
    _run(sim, dep, t0 - 80 * 60)
    _array(sc, t0, gpus)
    for name, user, acct, part, gpn, ago in (
        ("[red]eval[/red]", "farah", "vision", "interactive", 1, 12),
        ("\N{ROCKET} launch-v2", "jun", "rl", "debug", 2, 4),
    ):
        job = _job(sim, name, user, acct, part, 1, min(gpn, gpus), gpus, 120, t0 - ago * 60 - 30,
                   90 * 60)
        _run(sim, job, t0 - ago * 60)
    for name, user, state, ago in (("eval-harness", "hiro", "COMPLETED", 190), ("gpu-burn", "erin", "FAILED", 70)):
        job = _job(sim, name, user, "nlp" if user == "hiro" else "infra", "debug", 1, 1, gpus, 30,
                   t0 - ago - 900, 600)
        _run(sim, job, t0 - ago - 600)
        if job.job_id in sim.jobs:
            sim.finish(job, state, t0 - ago, exit_code=0 if state == "COMPLETED" else 1,
                       reason="None" if state == "COMPLETED" else "NonZeroExitCode")


def _array(sc: Scenario, t0: int, gpus: int) -> None:
    sim = sc.sim
    arr_id = sim.new_id()
    sc.array_job_id = arr_id
    rem = _job(sim, "sweep-lr", "carol", "nlp", "train", 1, min(2, gpus), gpus, 120,
               t0 - 40 * 60, None, job_id=arr_id, array_job_id=arr_id,
               array_pending=list(range(32)), array_max_running=4, priority=20_000)
    rem.stdout = f"/home/carol/sweep/logs/sweep-lr-{arr_id}_%a.out"
    rem.state = PENDING
    for k in range(4):
        task = sim._next_task(rem)
        _run(sim, task, t0 - (20 - 5 * k) * 60)
    sim.submit(rem)


def _fill(sim: Simulation, rng: random.Random, t0: int, gpus: int) -> None:
    """Random running jobs until each partition is about as busy as a real one.

    Nodes are filled in order through a cursor, so building a 10,000-node
    cluster stays linear instead of scanning every node for every job."""
    for part, target in (("train", 0.9), ("debug", 0.6), ("interactive", 0.5)):
        tmpls = [t for t in TEMPLATES if t[1] == part]
        nodes = [sim.nodes[n] for n in sim.partitions[part].nodes]
        used = sum(n.gpus - n.owners.count(None) for n in nodes)
        cursor, misses = 0, 0
        while misses < 30 and used < target * len(nodes) * gpus:
            job = make_job(sim, rng, rng.choice(tmpls), 0, gpus)
            while cursor < len(nodes) and not (nodes[cursor].available and nodes[cursor].owners.count(None)):
                cursor += 1
            window = [n.name for n in nodes[cursor : cursor + 64] if sim.fits(n, job)]
            if len(window) < job.node_count:
                misses += 1
                continue
            limit_s = job.time_limit * 60
            started = t0 - rng.randint(60, max(120, min(limit_s - 600, 36 * 3600)))
            job.submit_time = started - rng.randint(30, 4 * 3600)
            left = rng.randint(300, 4 * 3600)
            job.duration = (t0 - started) + left if job.duration is not None else None
            sim.jobs[job.job_id] = job
            sim.start(job, window[: job.node_count], started)
            used += job.gpus_per_node * job.node_count


def _special_pending(sc: Scenario, t0: int, gpus: int) -> None:
    sim = sc.sim
    big = _job(sim, "llama-405b-sft", "hiro", "nlp", "train", 16, gpus, gpus, 2880, t0 - 6 * 3600,
               20 * 3600, priority=50_000, qos="high")
    sim.submit(big)
    for name, user, acct, nodes, ago in (
        ("moe-8x7b-sft", "jun", "rl", 4, 3 * 3600),
        ("whisper-distill", "dmitri", "speech", 2, 2 * 3600),
        ("bert-large-finetune", "bob", "vision", 1, 45 * 60),
    ):
        sim.submit(_job(sim, name, user, acct, "train", nodes, gpus, gpus, 1440, t0 - ago, 5 * 3600,
                        priority=15_000 + ago // 60))
    sim.submit(_job(sim, "llama-70b-eval", "alice", "nlp", "train", 1, gpus, gpus, 240,
                    t0 - 50 * 60, 3600, priority=40_000))
    sim.submit(_job(sim, "gpu-burn-" + sc.xid_node, "erin", "infra", "train", 1, gpus, gpus, 30,
                    t0 - 100 * 60, 900, req_nodes=(sc.xid_node,), priority=45_000))
    dep = next((j for j in sim.jobs.values() if j.name == "resnet152-train"), None)
    if dep is not None:
        sim.submit(_job(sim, "resnet152-eval", "bob", "vision", "train", 1, min(2, gpus), gpus, 60,
                        t0 - 85 * 60, 1800, depends_on=dep.job_id, priority=35_000))
    sim.submit(_job(sim, "diffusion-xl-sweep", "farah", "vision", "train", 2, gpus, gpus, 1440,
                    t0 - 7 * 3600, 6 * 3600, held="user", priority=12_000))
