"""Fan-out and the SSH runner against real throwaway sshd servers."""

from __future__ import annotations

import asyncio
import signal

import pytest

from clusterlib import proc_state
from cockpit.errors import BackendError, CommandNotFound
from cockpit.remote.fanout import fanout
from cockpit.remote.pool import SshPool
from cockpit.remote.runner import SshRunner
from cockpit.remote.settings import SshSettings

pytestmark = pytest.mark.ssh


async def test_fanout_returns_every_hosts_result(sshd_farm, farm_settings):
    pool = SshPool(farm_settings)
    try:
        res = await fanout(pool, sshd_farm.names, ["sh", "-c", 'echo "$SSH_CONNECTION"'])
    finally:
        await pool.close()
    assert list(res) == sshd_farm.names
    for name, r in res.items():
        srv = sshd_farm.servers[name]
        assert r.ok, r
        # the server address each session saw proves it reached that host
        assert r.stdout.split()[2:4] == [srv.addr.encode(), str(srv.port).encode()]


async def test_arguments_reach_the_remote_program_verbatim(sshd_farm, farm_settings):
    hostile = ["a b", "$(touch /tmp/cockpit-pwned)", "`id`", "it's", 'q"uote', "semi;colon", "new\nline", "*", ""]
    runner = SshRunner(sshd_farm.names[0], SshPool(farm_settings))
    try:
        res = await runner.run(["printf", "%s\\0", *hostile])
    finally:
        await runner.close()
    assert res.ok
    assert res.stdout.split(b"\0")[:-1] == [h.encode() for h in hostile]


async def test_runner_uses_one_pooled_connection(sshd_farm, farm_settings):
    runner = SshRunner(sshd_farm.names[1], SshPool(farm_settings))
    try:
        ports = set()
        for _ in range(3):
            res = await runner.run(["sh", "-c", 'echo "$SSH_CONNECTION"'])
            ports.add(res.stdout.split()[1])  # the client port: same connection = same port
        assert len(ports) == 1
        res = await runner.run(["sh", "-c", "echo oops >&2; exit 3"], stdin=None)
        assert (res.returncode, res.stderr) == (3, b"oops\n")
        res = await runner.run(["cat"], stdin=b"fed in")
        assert res.stdout == b"fed in"
        with pytest.raises(CommandNotFound):
            await runner.run(["cockpit-no-such-program"])
    finally:
        await runner.close()


async def test_dead_and_frozen_hosts_become_errors_the_rest_intact(sshd_farm, farm_settings):
    dead, frozen = sshd_farm.names[3], sshd_farm.names[4]
    sshd_farm.stop(dead)
    sshd_farm.signal([sshd_farm.pid(frozen)], signal.SIGSTOP)
    pool = SshPool(farm_settings)
    try:
        res = await fanout(pool, sshd_farm.names, ["hostname"])
        # Bounded by cockpit's own timeouts, not by the host: it is still stopped (counted,
        # not timed, so a loaded machine cannot fail it).
        still_frozen = proc_state(sshd_farm.pid(frozen)) == "T"
    finally:
        await pool.close()
        sshd_farm.signal([sshd_farm.pid(frozen)], signal.SIGCONT)
        sshd_farm.start(dead)
    assert still_frozen
    assert "refused" in res[dead].error
    assert "no answer within" in res[frozen].error
    for name in sshd_farm.names[:3]:
        assert res[name].ok and res[name].stdout.strip(), res[name]


async def test_frozen_session_of_a_pooled_connection_times_out(sshd_farm, farm_settings):
    host = sshd_farm.names[2]
    pool = SshPool(farm_settings)
    try:
        await pool.run(host, ["true"])
        kids = sshd_farm.children(host)
        assert kids, "the pooled connection should have a session process"
        sshd_farm.signal(kids, signal.SIGSTOP)
        try:
            res = await fanout(pool, [host, sshd_farm.names[0]], ["true"], keep_connections=True)
            still_frozen = all(proc_state(k) in ("T", "") for k in kids)  # "": a session that ended
        finally:
            sshd_farm.signal(kids, signal.SIGCONT)
        # either the command timeout fires or keepalives (1 s x 3) close the dead connection first
        assert res[host].error and ("did not answer within" in res[host].error or "connection closed" in res[host].error.lower())
        assert still_frozen  # it returned while the session was stopped: bounded by our timeouts
        assert res[sshd_farm.names[0]].ok
        # the hung connection was dropped: the next call reconnects and works
        assert (await pool.run(host, ["true"])).ok
    finally:
        await pool.close()


async def test_unknown_host_key_is_refused_with_advice(sshd_farm, farm_settings, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    settings = SshSettings(**{**farm_settings.__dict__, "known_hosts": str(empty)})
    host = sshd_farm.names[0]
    srv = sshd_farm.servers[host]
    runner = SshRunner(host, SshPool(settings))
    try:
        with pytest.raises(BackendError) as exc:
            await runner.run(["true"])
    finally:
        await runner.close()
    msg = str(exc.value)
    assert "host key unknown or changed, refused" in msg
    assert f"ssh-keyscan -p {srv.port} {srv.addr}" in msg and "\n" not in msg


async def test_changed_host_key_is_refused(sshd_farm, farm_settings, tmp_path):
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other = (tmp_path / "other.pub").read_text().split()[:2]
    srv = sshd_farm.servers[sshd_farm.names[0]]
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[{srv.addr}]:{srv.port} {' '.join(other)}\n")
    settings = SshSettings(**{**farm_settings.__dict__, "known_hosts": str(kh)})
    pool = SshPool(settings)
    try:
        res = await fanout(pool, [srv.name], ["true"])
    finally:
        await pool.close()
    assert "refused" in res[srv.name].error


async def test_relaxed_checking_accepts_unknown_key_only_when_asked(sshd_farm, farm_settings, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    settings = SshSettings(**{**farm_settings.__dict__, "known_hosts": str(empty), "strict_host_key_checking": False})
    runner = SshRunner(sshd_farm.names[0], SshPool(settings))
    try:
        assert (await runner.run(["true"])).ok
    finally:
        await runner.close()


async def test_jump_host_carries_the_node_connections(sshd_farm, farm_settings):
    import subprocess

    jump, targets = sshd_farm.names[0], sshd_farm.names[1:3]
    settings = SshSettings(**{**farm_settings.__dict__, "jump_host": jump})
    pool = SshPool(settings)
    try:
        res = await fanout(pool, targets, ["sh", "-c", 'echo "$SSH_CONNECTION"'], keep_connections=True)
        owners = []
        for name in targets:
            assert res[name].ok, res[name]
            client_ip, client_port = res[name].stdout.split()[:2]
            ss = subprocess.run(["ss", "-tnpH", "state", "established", f"sport = :{client_port.decode()}"],
                                capture_output=True, text=True).stdout
            owners.append(ss)
        jump_session_pids = {str(p) for p in sshd_farm.children(jump)}
        for ss in owners:
            # the TCP connection to the node belongs to the jump host's sshd, not to us
            assert "sshd" in ss and any(f"pid={p}," in ss for p in jump_session_pids), ss
    finally:
        await pool.close()
