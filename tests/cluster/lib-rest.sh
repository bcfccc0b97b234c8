# slurmrestd with JWT for the test cluster (sourced by up after lib-up.sh).
# Debian's slurmrestd and slurm-wlm-jwt-plugin; slurmctld and slurmdbd accept auth/jwt as an
# alternative with a key made once under the state dir. slurmrestd refuses to run as root
# (22.05: "should not be run as the root user"; 24.11: "... as SlurmUser", which is root here),
# so it drops to an unprivileged user of its own (-u cockpit-rest, made here when missing) after
# opening its socket on head's loopback address. Not nobody: 26.05's slurmrestd refuses it
# ("fatal: Unable to resolve user: nobody", Debian sid, 26.05.5), 22.05 and 24.11 took it. It is
# started and stopped by pid like every other daemon; env.sh exports SLURMRESTD_URL and the
# unprivileged test user's token as COCKPIT_TEST_SLURM_JWT. Not as SLURM_JWT: with
# AuthAltTypes=auth/jwt every Slurm client that finds SLURM_JWT in its environment
# authenticates with it, so the suite's own sbatch as root would act as the test user
# ("Requested UID=0 doesn't match user UID=1001"). Tests hand it to cockpit as SLURM_JWT.

REST_KEY="$COCKPIT_CLUSTER_STATE/jwt_hs256.key"
REST_USER=cockpit-rest
# Derived from the controller's port, so a second instance (other-debian) gets its own too.
: "${COCKPIT_CLUSTER_REST_PORT:=$((COCKPIT_CLUSTER_CTLD_PORT + 3))}"   # 6820

rest_packages() { echo slurmrestd slurm-wlm-jwt-plugin; }

jwt_key() {  # the HS256 key slurmctld and slurmdbd check tokens with, made once
  if [ ! -s "$REST_KEY" ]; then
    mkdir -p "${REST_KEY%/*}"
    (umask 077; dd if=/dev/urandom bs=32 count=1 of="$REST_KEY" status=none)
  fi
  chmod 600 "$REST_KEY"
  echo "$REST_KEY"
}

jwt_lines() {  # slurm.conf / slurmdbd.conf: JWT accepted beside munge
  printf '%s\n' "AuthAltTypes=auth/jwt" "AuthAltParameters=jwt_key=$(jwt_key)"
}

rest_plugins() {  # 22.05 names each API version; 23.02 on serve them all through two plugins
  if version_ge "$1" 23.02; then echo "openapi/slurmctld,openapi/slurmdbd"
  elif acct_enabled; then echo "openapi/v0.0.38,openapi/dbv0.0.38"
  else echo "openapi/v0.0.38"; fi
}

rest_listening() {
  pid_alive "$PIDS/head.slurmrestd.pid" slurmrestd \
    || die "slurmrestd exited: $(tail -n 3 "$COCKPIT_CLUSTER_LOGS/head.slurmrestd.out" 2>/dev/null)"
  ss -Hltn 2>/dev/null | grep -Fq "$COCKPIT_CLUSTER_HEAD_ADDR:$COCKPIT_CLUSTER_REST_PORT "
}

ensure_rest_user() {  # a system account with no home and no shell, only for slurmrestd
  id "$REST_USER" >/dev/null 2>&1 && return 0
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
    -c "cockpit test cluster slurmrestd" "$REST_USER"
}

start_rest() {  # start_rest VERSION
  ensure_rest_user
  # SLURM_JWT=daemon: slurmrestd takes each request's own token (else "Rejecting thread config token").
  SLURM_JWT=daemon start_daemon head slurmrestd slurmrestd -f "$SLURM_CONF" -a rest_auth/jwt \
    -s "$(rest_plugins "$1")" -u "$REST_USER" "$COCKPIT_CLUSTER_HEAD_ADDR:$COCKPIT_CLUSTER_REST_PORT"
  wait_until 20 "slurmrestd to listen" rest_listening
}

rest_token() {  # a token for the unprivileged test user, valid for a whole suite (8 h)
  scontrol token username="$COCKPIT_CLUSTER_USER" lifespan=28800 | sed -n 's/^SLURM_JWT=//p'
}

write_rest_env() {  # appended to env.sh by write_env
  echo "export SLURMRESTD_URL=http://$COCKPIT_CLUSTER_HEAD_ADDR:$COCKPIT_CLUSTER_REST_PORT"
  echo "export COCKPIT_TEST_REST_PORT=$COCKPIT_CLUSTER_REST_PORT"
  echo "export COCKPIT_TEST_REST_USER=$COCKPIT_CLUSTER_USER"
  echo "export COCKPIT_TEST_REST_DAEMON_USER=$REST_USER"  # whom a test's own slurmrestd runs as
  echo "export COCKPIT_TEST_SLURM_JWT=$(rest_token)"
}
