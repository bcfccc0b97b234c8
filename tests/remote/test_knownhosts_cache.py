"""known_hosts parsed once per pool, yet as strict as asyncssh reading it each time
(real throwaway sshd servers)."""

from __future__ import annotations

import os
import subprocess

import pytest

from cockpit.remote.fanout import fanout
from cockpit.remote.pool import SshPool
from cockpit.remote.settings import SshSettings

pytestmark = pytest.mark.ssh


async def test_a_fanout_parses_known_hosts_once(sshd_farm, farm_settings):
    pool = SshPool(SshSettings(**{**farm_settings.__dict__, "known_hosts": str(sshd_farm.known_hosts)}))
    try:
        first = await fanout(pool, sshd_farm.names, ["true"])
        again = await fanout(pool, sshd_farm.names, ["true"])
    finally:
        await pool.close()
    assert all(r.ok for r in [*first.values(), *again.values()])
    assert pool.known_hosts.reads == 1  # 10 connections, one parse


async def test_a_config_that_chooses_files_per_host_is_left_to_asyncssh(sshd_farm, farm_settings):
    # the farm's ssh config names UserKnownHostsFile per Host: asyncssh evaluates it (and checks)
    pool = SshPool(farm_settings)
    try:
        assert pool.known_hosts.for_host(sshd_farm.names[0]) == ()
        assert (await fanout(pool, sshd_farm.names[:2], ["true"]))[sshd_farm.names[0]].ok
    finally:
        await pool.close()
    assert pool.known_hosts.reads == 0


async def test_a_changed_known_hosts_file_is_read_again(sshd_farm, farm_settings, tmp_path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other = " ".join((tmp_path / "other.pub").read_text().split()[:2])
    srv = sshd_farm.servers[sshd_farm.names[0]]
    good = sshd_farm.known_hosts.read_text()
    kh = tmp_path / "known_hosts"
    kh.write_text(good)
    pool = SshPool(SshSettings(**{**farm_settings.__dict__, "known_hosts": str(kh)}))
    try:
        assert (await fanout(pool, [srv.name], ["true"]))[srv.name].ok
        kh.write_text(f"[{srv.addr}]:{srv.port} {other}\n")  # the key changed: must not stay trusted
        os.utime(kh, ns=(1, 1))  # a different mtime even within one clock tick
        refused = (await fanout(pool, [srv.name], ["true"]))[srv.name]
        kh.write_text(good)
        accepted = (await fanout(pool, [srv.name], ["true"]))[srv.name]
    finally:
        await pool.close()
    assert refused.error is not None and "refused" in refused.error
    assert accepted.ok
    assert pool.known_hosts.reads == 3


async def test_user_known_hosts_file_none_trusts_nothing(sshd_farm, farm_settings, tmp_path):
    srv = sshd_farm.servers[sshd_farm.names[0]]
    cfg = tmp_path / "ssh_config"
    # as OpenSSH: no known hosts file + strict checking = every key refused (asyncssh would stop checking)
    cfg.write_text(sshd_farm.ssh_config.read_text().replace(
        f"UserKnownHostsFile {sshd_farm.known_hosts}", "UserKnownHostsFile none"))
    pool = SshPool(SshSettings(**{**farm_settings.__dict__, "config_file": str(cfg)}))
    try:
        res = (await fanout(pool, [srv.name], ["true"]))[srv.name]
    finally:
        await pool.close()
    assert res.error is not None and "host key unknown or changed, refused" in res.error
