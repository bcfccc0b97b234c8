"""A node's host key changes in the middle of a session (the node was reinstalled), on the
real test cluster: the pool refuses to reconnect to it, says in one line how to accept the
new key, and every other node keeps working.

The change is real: node03's sshd (the cluster's own, tests/cluster/up) is given a new
private host key and re-executed by its PID with SIGHUP, which makes sshd read its keys
again. Only the private key file changes (up builds known_hosts from the .pub files, so a
concurrent `up` keeps the original key trusted); the original bytes are written back and
sshd re-executed again in a finally, and the test waits until node03 serves the original
key before it ends. Between the two fan-outs the pool's own session on node03 is ended
(its sshd processes, found by the connection's port, get SIGTERM), as a reinstall would
end it, so the second fan-out must connect again. No step is timed: each wait is for an
event (sshd serving a key, the pool's connection closed).
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cockpit.remote.fanout import fanout
from cockpit.remote.pool import SshPool

pytestmark = [pytest.mark.cluster, pytest.mark.ssh]
NODE = "node03"


def _wait(cond, what: str, seconds: float = 30.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} within {seconds:g} s")


async def _await(cond, what: str, seconds: float = 30.0):
    """_wait that lets the event loop run meanwhile (asyncssh sees the connection close)."""
    for _ in range(int(seconds / 0.05)):
        if cond():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} within {seconds:g} s")


def _served_key(addr: str, port: str) -> str:
    """The ed25519 key sshd at addr:port offers now ("" while it does not answer)."""
    res = subprocess.run(["ssh-keyscan", "-T", "2", "-t", "ed25519", "-p", port, addr],
                         capture_output=True, text=True, timeout=30)
    for line in res.stdout.splitlines():
        words = line.split()
        if len(words) >= 3 and not line.startswith("#"):
            return words[2]
    return ""


def _session_pids(addr: str, port: str, local: tuple[str, int]) -> set[int]:
    """The sshd processes that hold the server end of the connection from ``local``."""
    res = subprocess.run(["ss", "-Htnp", "src", f"{addr}:{port}", "dst", f"{local[0]}:{local[1]}"],
                         capture_output=True, text=True, timeout=10)
    return {int(p) for p in re.findall(r"pid=(\d+)", res.stdout)}


def _rehup(pid: int, addr: str, port: str, key: str) -> None:
    os.kill(pid, signal.SIGHUP)
    _wait(lambda: _served_key(addr, port) == key, f"{NODE}'s sshd serving key {key[:16]}...")


async def test_changed_host_key_is_refused_with_the_accept_command_and_others_work(cluster_env, cluster_settings,
                                                                                   tmp_path):
    nodes = cluster_env["COCKPIT_TEST_NODES"].split()
    ssh_dir = Path(cluster_env["COCKPIT_TEST_CLUSTER_RUN"], "ssh")
    key_file = ssh_dir / f"host_{NODE}_ed25519"
    known = cluster_env["COCKPIT_TEST_SSH_KNOWN_HOSTS"]
    addr = f'{cluster_env["COCKPIT_TEST_NODE_NET"]}.{int(NODE[4:])}'
    port = cluster_env["COCKPIT_TEST_SSH_PORT"]
    pid = int(Path(cluster_env["COCKPIT_TEST_CLUSTER_RUN"], "pids", f"{NODE}.sshd.pid").read_text().split()[0])
    original = key_file.read_bytes()
    original_pub = (ssh_dir / f"host_{NODE}_ed25519.pub").read_text().split()[1]
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{NODE}-reinstalled",
                    "-f", str(tmp_path / "new")], check=True)
    new_pub = (tmp_path / "new.pub").read_text().split()[1]
    assert _served_key(addr, port) == original_pub

    pool = SshPool(cluster_settings)
    try:
        first = await fanout(pool, nodes, ["hostname"], keep_connections=True)
        assert {h: r.stdout.decode().strip() for h, r in first.items()} == {h: h for h in nodes}
        conn = await pool.connection(NODE)
        local = conn.get_extra_info("sockname")[:2]
        try:
            key_file.write_bytes((tmp_path / "new").read_bytes())
            _rehup(pid, addr, port, new_pub)
            for session in _session_pids(addr, port, local):
                try:
                    os.kill(session, signal.SIGTERM)
                except ProcessLookupError:  # one of OpenSSH 10's session processes, already gone
                    pass
            await _await(conn.is_closed, "the pool's connection to node03 closed")
            second = await fanout(pool, nodes, ["hostname"], keep_connections=True)
        finally:
            key_file.write_bytes(original)
            _rehup(pid, addr, port, original_pub)
        third = await fanout(pool, [NODE], ["hostname"], keep_connections=True)
    finally:
        await pool.close()

    for h in nodes:
        if h != NODE:
            assert second[h].ok and second[h].stdout.decode().strip() == h, second[h]
    err = second[NODE].error
    assert err is not None and "\n" not in err, err
    assert err.startswith(f"ssh {NODE}: host key changed, refused"), err
    # The exact command, with this node's address, port and the known_hosts file in use.
    hint = f"ssh-keygen -R '[{addr}]:{port}' -f {known} && ssh-keyscan -p {port} {addr} >> {known}"
    assert hint in err, err
    assert f"ssh-keyscan -p {port} {addr} | ssh-keygen -lf -" in err, err
    # Restored: the original key is served and trusted again.
    assert third[NODE].ok and third[NODE].stdout.decode().strip() == NODE, third[NODE]


async def test_the_accept_command_in_the_refusal_works(cluster_env, cluster_settings, tmp_path):
    """The command the refusal gives, run as given on a copy of known_hosts whose node03 key
    is stale, makes both cockpit's pool and OpenSSH's own client trust node03 again."""
    from dataclasses import replace

    from cockpit.errors import BackendError

    addr = f'{cluster_env["COCKPIT_TEST_NODE_NET"]}.{int(NODE[4:])}'
    port = cluster_env["COCKPIT_TEST_SSH_PORT"]
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "stale")], check=True)
    stale = " ".join((tmp_path / "stale.pub").read_text().split()[:2])
    kh = tmp_path / "known hosts"  # a space: the command must quote the path
    lines = Path(cluster_env["COCKPIT_TEST_SSH_KNOWN_HOSTS"]).read_text().splitlines()
    kh.write_text("".join(f"{ln.split()[0]} {stale}\n" if f"[{addr}]:{port}" in ln else ln + "\n" for ln in lines))
    settings = replace(cluster_settings, known_hosts=str(kh))
    pool = SshPool(settings)
    try:
        with pytest.raises(BackendError) as exc:
            await pool.run(NODE, ["hostname"])
    finally:
        await pool.close()
    msg = str(exc.value)
    assert f"ssh {NODE}: host key changed, refused" in msg and "\n" not in msg, msg
    accept = msg.rsplit("accept it with `", 1)[1].rstrip("`")
    assert shlex.quote(str(kh)) in accept
    ssh = ["ssh", "-F", cluster_env["COCKPIT_TEST_SSH_CONFIG"], "-o", f'UserKnownHostsFile="{kh}"', NODE, "hostname"]
    assert subprocess.run(ssh, capture_output=True, text=True, timeout=30).returncode != 0
    subprocess.run(["sh", "-c", accept], check=True, capture_output=True, timeout=30)
    res = subprocess.run(ssh, capture_output=True, text=True, timeout=30)
    assert res.returncode == 0 and res.stdout.strip() == NODE, res.stderr
    pool = SshPool(settings)
    try:
        assert (await pool.run(NODE, ["hostname"])).stdout.decode().strip() == NODE
    finally:
        await pool.close()
    # the stale key is gone and the other hosts' lines are untouched (OpenSSH 10's
    # ssh-keyscan also writes "# host SSH-2.0-..." comment lines, which ssh ignores)
    after = [ln for ln in kh.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert not any(stale.split()[1] in ln for ln in after)
    assert [ln for ln in after if f"[{addr}]:{port}" not in ln] == [ln for ln in lines if f"[{addr}]:{port}" not in ln]
