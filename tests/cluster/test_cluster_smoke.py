"""Smoke checks of the real Slurm test cluster itself (tests/cluster/up)."""

import ipaddress
import re

import pytest

from clusterlib import cancel, gpu_gres, profile, run, scontrol_show, ssh_argv, submit, wait_for

pytestmark = pytest.mark.cluster


def test_srun_on_two_nodes_prints_their_hostnames(cluster):
    res = run(["srun", "-N2", "-w", "node[01-02]", "-J", "smoke-hostname", "hostname"])
    assert sorted(res.stdout.split()) == ["node01", "node02"]


def test_typed_gres_sets_cuda_visible_devices(cluster):
    gpu = f"gpu:{cluster['COCKPIT_TEST_GPU_TYPE']}:2"
    res = run(["srun", "-N1", f"--gres={gpu}", "-J", "smoke-gres",
               "printenv", "CUDA_VISIBLE_DEVICES"])
    assert res.stdout.strip() == "0,1"


def test_running_job_shows_gpu_indexes(cluster):
    # Site profile: node01 (untyped) and node04 (h100), the nodes with whole GPUs of one kind.
    where = {"nodelist": "node01,node04"} if profile(cluster) == "site" else {}
    job = submit("sleep 120", job_name="smoke-gres-detail", nodes=2, gres=gpu_gres(2, cluster), **where)
    try:
        wait_for(lambda: scontrol_show("job", job)["JobState"] == "RUNNING", timeout=30)
        detail = run(["scontrol", "-d", "show", "job", job]).stdout
        # typed "gpu:h100:2(IDX:0-1)"; untyped "gpu:2(...)" or, as 24.05 prints it, "gpu:(null):2(...)"
        assert re.search(r"GRES=gpu:(?:[\w.()]+:)?2\(IDX:0-1\)", detail), detail
    finally:
        cancel(job)


def test_topology_has_two_leaves_under_a_spine(cluster):
    out = run(["scontrol", "show", "topology"]).stdout
    assert re.search(r"SwitchName=leaf1 Level=0 .*Nodes=node\[01-02\]", out), out
    assert re.search(r"SwitchName=spine Level=1 .*Switches=leaf\[1-2\]", out), out


def test_partitions_and_gpus(cluster):
    site = profile(cluster) == "site"
    assert scontrol_show("partition", "debug")["Nodes"] == ("node[01-03]" if site else "node[01-02]")
    node = scontrol_show("node", "node03")  # the site profile's CPU-only node
    assert node["Gres"] == ("(null)" if site else f"gpu:{cluster['COCKPIT_TEST_GPU_TYPE']}:8")
    assert node["NodeAddr"] == f"{cluster['COCKPIT_TEST_NODE_NET']}.3"


@pytest.mark.ssh
@pytest.mark.parametrize("host", ["node01", "head"])
def test_ssh_reaches_the_host_namespace(cluster, host):
    res = run(ssh_argv(cluster, host, "hostname"), timeout=30)
    assert res.stdout.strip() == host


@pytest.mark.ssh
def test_ssh_as_unprivileged_user(cluster):
    user = cluster["COCKPIT_TEST_UNPRIV_USER"]
    res = run(ssh_argv(cluster, "node02", "id", "-un", user=user), timeout=30)
    assert res.stdout.strip() == user


@pytest.mark.ssh
def test_ssh_refuses_password_logins(cluster):
    res = run(["ssh", "-F", cluster["COCKPIT_TEST_SSH_CONFIG"], "-o", "IdentityFile=/dev/null",
               "-o", "PreferredAuthentications=password,keyboard-interactive", "node01", "true"],
              check=False, timeout=30)
    assert res.returncode == 255
    assert "Permission denied" in res.stderr


def _listeners() -> list[str]:
    out = run(["ss", "-Hltnp"]).stdout
    return [line for line in out.splitlines() if re.search(r'"(slurm|sshd|munged)', line)]


def test_cluster_daemons_listen_on_loopback_only(cluster):
    lines = _listeners()
    assert any(f":{cluster['COCKPIT_TEST_CTLD_PORT']} " in line for line in lines), lines
    for line in lines:
        local = line.split()[3]
        addr = local.rsplit(":", 1)[0].strip("[]")
        assert ipaddress.ip_address(addr).is_loopback, line


def test_srun_inside_a_batch_job_spans_two_nodes(cluster, tmp_path):
    """A job step launched from inside a batch job (how nccl-tests and torch jobs
    start) reaches both nodes: the task prolog's client config makes it work."""
    out = tmp_path / "steps.out"
    job = submit("srun hostname", nodes=2, output=str(out), job_name="cockpit-smoke-steps")
    try:
        text = wait_for(lambda: out.exists() and len(out.read_text().split()) >= 2 and out.read_text(), timeout=60)
        assert sorted(text.split()) == ["node01", "node02"]
    finally:
        cancel(job)
