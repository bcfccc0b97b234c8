# Functions used by tests/cluster/up (sourced after common.sh).

STARTED=()

install_packages() {
  local p need=()
  for p in slurm-wlm munge openssh-server openssh-client iproute2 procps util-linux $(acct_packages) $(rest_packages); do
    dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
  done
  [ ${#need[@]} -eq 0 ] && return 0
  log "installing ${need[*]}"
  # Without systemd the postinst scripts would start sshd on 0.0.0.0:22 and munged:
  # a policy-rc.d that answers 101 forbids every service start during the install.
  local made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; made_policy=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
  [ $made_policy = 1 ] && rm -f /usr/sbin/policy-rc.d
  return 0
}

ensure_user() {
  local u=$COCKPIT_CLUSTER_USER
  if ! id "$u" >/dev/null 2>&1; then
    useradd -m -s /bin/bash -c "cockpit test user (not an operator)" "$u"
    touch "$COCKPIT_CLUSTER_STATE/.created-user"
  fi
  # With UsePAM no, sshd refuses accounts whose password starts with "!" (locked), even for keys.
  if [ "$(getent shadow "$u" | cut -d: -f2)" != "*" ]; then usermod -p '*' "$u"; fi
}

write_hosts_block() {
  local block h tmp
  block="$HOSTS_BEGIN"$'\n'"$(host_addr head) head"$'\n'
  for h in $(node_names); do block+="$(node_addr "$h") $h"$'\n'; done
  # srun binds its callback ports to what the submit host's name resolves to.
  if ! getent hosts "$(hostname)" >/dev/null; then block+="127.0.0.1 $(hostname)"$'\n'; fi
  block+="$HOSTS_END"
  tmp=$(mktemp)
  sed "\|^$HOSTS_BEGIN\$|,\|^$HOSTS_END\$|d" /etc/hosts > "$tmp"
  printf '%s\n' "$block" >> "$tmp"
  # /etc/hosts may be a bind mount: rewrite in place, and only when something changed.
  cmp -s "$tmp" /etc/hosts || cat "$tmp" > /etc/hosts
  rm -f "$tmp"
}

make_fake_gpus() {
  local i
  mkdir -p "$COCKPIT_CLUSTER_RUN/fake-gpu"
  for ((i = 0; i < COCKPIT_CLUSTER_GPUS; i++)); do
    ln -sfn /dev/null "$COCKPIT_CLUSTER_RUN/fake-gpu/nvidia$i"
  done
}

render() {  # render TEMPLATE [KEY=VALUE...]: substitute @KEY@ placeholders, print the result
  local t=$1; shift
  local text kv
  text=$(cat "$CLUSTER_DIR/templates/$t")
  set -- "MARK=$MARK" "RUN=$COCKPIT_CLUSTER_RUN" "STATE=$COCKPIT_CLUSTER_STATE" \
    "LOGS=$COCKPIT_CLUSTER_LOGS" "SSH=$SSHD" "$@"
  for kv in "$@"; do text=${text//@${kv%%=*}@/${kv#*=}}; done
  printf '%s\n' "$text"
}

node_lines() {
  local n
  if [ "$COCKPIT_CLUSTER_PROFILE" = site ]; then site_node_lines; return; fi
  for n in $(node_names); do
    echo "NodeName=$n NodeAddr=$(node_addr "$n") NodeHostname=$n CPUs=$COCKPIT_CLUSTER_CPUS" \
      "RealMemory=$COCKPIT_CLUSTER_MEM Gres=gpu:$COCKPIT_CLUSTER_GPU_TYPE:$COCKPIT_CLUSTER_GPUS State=UNKNOWN"
  done
}

topology_lines() {  # leaf switches of two nodes each under one spine
  local i leaves=0
  echo "# $MARK: written by tests/cluster/up; edits are lost."
  for ((i = 1; i <= COCKPIT_CLUSTER_NODES; i += 2)); do
    leaves=$((leaves + 1))
    if [ $i -lt "$COCKPIT_CLUSTER_NODES" ]; then
      printf 'SwitchName=leaf%d Nodes=node[%02d-%02d]\n' $leaves $i $((i + 1))
    else
      printf 'SwitchName=leaf%d Nodes=node%02d\n' $leaves $i
    fi
  done
  echo "SwitchName=spine Switches=leaf[1-$leaves]"
}

# Slurm 25.11 added the metrics/openmetrics plugin: slurmctld answers plain HTTP GETs on its
# own port, unauthenticated while slurm.conf sets no PrivateData (none here) and no
# MetricsAuthUsers. 22.05 and 24.11 have no such plugin (slurmctld would refuse the key).
metrics_enabled() { version_ge "$1" 25.11; }
metrics_lines() {
  metrics_enabled "$1" || return 0
  printf '%s\n' "# Slurm 25.11+: OpenMetrics at http://head:SlurmctldPort/metrics/{jobs,nodes,partitions,scheduler,...}" \
    "MetricsType=metrics/openmetrics"
}

# Render every config into a temporary dir; install only on change. A change under running
# daemons makes them complain about a different slurm.conf, so the cluster is restarted.
install_configs() {
  local version=$1 tmp f plugin="" changed=0
  tmp=$(mktemp -d)
  version_ge "$version" 24.05 && plugin="CgroupPlugin=disabled"
  render slurm.conf.in NAME="$COCKPIT_CLUSTER_NAME" HEAD_ADDR="$COCKPIT_CLUSTER_HEAD_ADDR" \
    CTLD_PORT="$COCKPIT_CLUSTER_CTLD_PORT" SLURMD_PORT="$COCKPIT_CLUSTER_SLURMD_PORT" \
    CONF_DIR="$COCKPIT_CLUSTER_CONF_DIR" NODE_LINES="$(node_lines)" ACCOUNTING_LINES="$(accounting_lines)" \
    JWT_LINES="$(jwt_lines)" \
    > "$tmp/slurm.conf"
  # Appended, not a template placeholder: 22.05's and 24.11's slurm.conf stay byte for byte
  # what they were, so a running cluster of theirs is not restarted for this.
  metrics_lines "$version" >> "$tmp/slurm.conf"
  render_slurmdbd_conf "$tmp/slurmdbd.conf"
  # Clients inside jobs (see TaskProlog in slurm.conf.in).
  sed 's/^CommunicationParameters=.*/CommunicationParameters=NoCtldInAddrAny/' "$tmp/slurm.conf" \
    > "$tmp/slurm-client.conf"
  printf '#!/bin/sh\n# %s: job tasks use the client config (see slurm.conf)\necho "export SLURM_CONF=%s"\n' \
    "$MARK" "$COCKPIT_CLUSTER_CONF_DIR/slurm-client.conf" > "$tmp/task-prolog.conf"
  render gres.conf.in NODES="node[01-$(last_node | cut -c5-)]" GPU_TYPE="$COCKPIT_CLUSTER_GPU_TYPE" \
    LAST_GPU=$((COCKPIT_CLUSTER_GPUS - 1)) > "$tmp/gres.conf"
  if [ "$COCKPIT_CLUSTER_PROFILE" = site ]; then  # lib-profile.sh: the nodes as sites write them
    site_gres_conf > "$tmp/gres.conf"
    sed -i -e 's/^GresTypes=gpu$/GresTypes=gpu,shard/' -e '/^PartitionName=/d' "$tmp/slurm.conf" "$tmp/slurm-client.conf"
    for f in slurm slurm-client; do site_partition_lines >> "$tmp/$f.conf"; done
  fi
  render cgroup.conf.in CGROUP_PLUGIN="$plugin" > "$tmp/cgroup.conf"
  topology_lines > "$tmp/topology.conf"
  local confs="slurm slurm-client gres cgroup topology task-prolog"
  acct_enabled && confs+=" slurmdbd"
  for f in $confs; do
    local dst="$COCKPIT_CLUSTER_CONF_DIR/$f.conf"
    [ "$f" = task-prolog ] && dst="$COCKPIT_CLUSTER_CONF_DIR/task-prolog"
    if [ -e "$dst" ] && ! grep -q "$MARK" "$dst"; then
      rm -rf "$tmp"; die "$dst exists and was not written by this script; move it away first"
    fi
    cmp -s "$tmp/$f.conf" "$dst" || changed=1
  done
  if [ $changed = 1 ] && any_daemon_alive; then
    log "configuration changed: restarting the cluster"
    "$CLUSTER_DIR/down"
    mkdir -p "$PIDS" "$NSDIR" "$SSHD"
  fi
  if [ $changed = 1 ]; then
    for f in slurm slurm-client gres cgroup topology; do install -m 644 "$tmp/$f.conf" "$COCKPIT_CLUSTER_CONF_DIR/$f.conf"; done
    install -m 755 "$tmp/task-prolog.conf" "$COCKPIT_CLUSTER_CONF_DIR/task-prolog"
    # slurmdbd refuses a config (it holds the database password) that others can read.
    if acct_enabled; then install -m 600 "$tmp/slurmdbd.conf" "$COCKPIT_CLUSTER_CONF_DIR/slurmdbd.conf"
    else rm -f "$COCKPIT_CLUSTER_CONF_DIR/slurmdbd.conf"; fi
  fi
  rm -rf "$tmp"
}

any_daemon_alive() {
  local f name
  for f in "$PIDS"/*.pid; do
    [ -e "$f" ] || continue
    name=${f##*/}; name=${name%.pid}; name=${name#*.}
    pid_alive "$f" "$name" && return 0
  done
  return 1
}

setup_ssh() {
  local h key="$SSHD/id_ed25519" kh="" cfg=""
  [ -s "$key" ] || ssh-keygen -q -t ed25519 -N '' -C cockpit-cluster-test -f "$key"
  install -m 644 "$key.pub" "$SSHD/authorized_keys"
  for h in head $(node_names); do
    [ -s "$SSHD/host_${h}_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C "$h" -f "$SSHD/host_${h}_ed25519"
    render sshd_config.in HOST="$h" ADDR="$(host_addr "$h")" PORT="$COCKPIT_CLUSTER_SSH_PORT" \
      CONF_DIR="$COCKPIT_CLUSTER_CONF_DIR" > "$SSHD/sshd_$h.conf"
    kh+="[$h]:$COCKPIT_CLUSTER_SSH_PORT,[$(host_addr "$h")]:$COCKPIT_CLUSTER_SSH_PORT $(cut -d' ' -f1,2 "$SSHD/host_${h}_ed25519.pub")"$'\n'
    cfg+="Host $h"$'\n'"    HostName $(host_addr "$h")"$'\n'
  done
  printf '%s' "$kh" > "$SSHD/known_hosts"
  # ssh_config patterns only know * and ?: node[0-9]* would silently match nothing.
  { echo "# $MARK: client config for the test cluster (ssh -F $SSHD/config node01)"
    printf '%s' "$cfg"
    echo "Host node?? head"
    echo "    Port $COCKPIT_CLUSTER_SSH_PORT"
    echo "    User root"
    echo "    IdentityFile $key"
    echo "    IdentitiesOnly yes"
    echo "    UserKnownHostsFile $SSHD/known_hosts"
    echo "    StrictHostKeyChecking yes"
    echo "    BatchMode yes"
  } > "$SSHD/config"
}

munge_works() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
  munge_works && return 0
  mkdir -p /run/munge; chown munge:munge /run/munge; chmod 755 /run/munge
  if [ ! -s /etc/munge/munge.key ]; then mungekey --create >/dev/null; chown munge:munge /etc/munge/munge.key; fi
  setsid setpriv --reuid munge --regid munge --init-groups -- "$(command -v munged)" -F \
    </dev/null >>"$COCKPIT_CLUSTER_LOGS/munged.out" 2>&1 &
  echo $! > "$PIDS/root.munged.pid"
  STARTED+=(munged)
  local i; for ((i = 0; i < 50; i++)); do munge_works && return 0; sleep 0.1; done
  die "munged did not start: see $COCKPIT_CLUSTER_LOGS/munged.out"
}

host_ns_pid() {  # a live daemon of HOST whose UTS namespace later daemons can join
  local f name
  for f in "$PIDS/$1".*.pid; do
    [ -e "$f" ] || continue
    name=${f##*/}; name=${name%.pid}; name=${name#*.}
    if pid_alive "$f" "$name" && [ "$(readlink "/proc/$(cat "$f")/ns/uts")" != "$(root_uts)" ]; then
      cat "$f"; return 0
    fi
  done
}

# start_daemon HOST NAME BIN ARGS...: run BIN in HOST's UTS namespace unless already running.
# The first daemon of a host creates the namespace (hostname = HOST); later ones join it.
start_daemon() {
  # Exec the Debian alternatives path, not the -wlm file it points to: Slurm decides it runs
  # as slurmd/slurmctld from argv[0], and as "slurmd-wlm" it ignores every GPU in gres.conf.
  local host=$1 name=$2 bin; bin=$(command -v "$3" || echo "/usr/sbin/$3"); shift 3
  local pidf="$PIDS/$host.$name.pid" nspid pid i
  pid_alive "$pidf" "$name" && return 0
  nspid=$(host_ns_pid "$host")
  if [ -n "$nspid" ]; then
    setsid nsenter --uts --target "$nspid" -- "$bin" "$@" \
      </dev/null >>"$COCKPIT_CLUSTER_LOGS/$host.$name.out" 2>&1 &
  else
    setsid unshare --uts -- /bin/sh -c 'hostname "$0" && exec "$@"' "$host" "$bin" "$@" \
      </dev/null >>"$COCKPIT_CLUSTER_LOGS/$host.$name.out" 2>&1 &
  fi
  pid=$!
  echo "$pid" > "$pidf"
  for ((i = 0; i < 50; i++)); do
    pid_alive "$pidf" "$name" && break
    [ -d "/proc/$pid" ] || break
    sleep 0.05
  done
  pid_alive "$pidf" "$name" || die "$name for $host did not start: $(tail -n 5 "$COCKPIT_CLUSTER_LOGS/$host.$name.out" 2>/dev/null)"
  readlink "/proc/$pid/ns/uts" > "$NSDIR/$host.uts"
  STARTED+=("$host:$name")
}

wait_until() {  # wait_until SECONDS WHAT CMD...: poll CMD every 0.1 s
  local limit=$(( $1 * 10 )) what=$2 i; shift 2
  for ((i = 0; i < limit; i++)); do "$@" && return 0; sleep 0.1; done
  die "timed out waiting for $what (logs: $COCKPIT_CLUSTER_LOGS)"
}

ctld_up() {
  pid_alive "$PIDS/head.slurmctld.pid" slurmctld \
    || die "slurmctld exited: $(tail -n 3 "$COCKPIT_CLUSTER_LOGS/head.slurmctld.out" 2>/dev/null)"
  scontrol ping 2>/dev/null | grep -q "is UP"
}

wait_for_ctld() { wait_until 30 "slurmctld" ctld_up; }

nodes_registered() {
  # A node that has not registered yet shows "*" (not responding) or state unk.
  local states; states=$(sinfo -h -N -o '%t' 2>/dev/null) || return 1
  [ -n "$states" ] && ! grep -Eq '\*|unk|^$' <<<"$states"
}

wait_for_nodes() { wait_until 60 "all slurmd to register" nodes_registered; }

sshd_listening() {
  local h listen; listen=$(ss -Hltn 2>/dev/null)
  for h in head $(node_names); do
    grep -Fq "$(host_addr "$h"):$COCKPIT_CLUSTER_SSH_PORT " <<<"$listen" || return 1
  done
}

wait_for_sshd() { wait_until 20 "every sshd to listen" sshd_listening; }

write_env() {
  local f="$COCKPIT_CLUSTER_RUN/env.sh"
  { echo "# $MARK by tests/cluster/up: source this file to use the test cluster."
    echo "export SLURM_CONF=$SLURM_CONF"
    echo "export COCKPIT_TEST_SLURM_VERSION=$1"
    echo "export COCKPIT_TEST_CLUSTER_NAME=$COCKPIT_CLUSTER_NAME"
    echo "export COCKPIT_TEST_PROFILE=$COCKPIT_CLUSTER_PROFILE"  # site: the GPUs differ per node (lib-profile.sh)
    echo "export COCKPIT_TEST_NODE_COUNT=$COCKPIT_CLUSTER_NODES"
    echo "export COCKPIT_TEST_NODES=\"$(node_names | tr '\n' ' ' | sed 's/ $//')\""
    echo "export COCKPIT_TEST_NODE_NET=$COCKPIT_CLUSTER_NET"
    echo "export COCKPIT_TEST_HEAD=head"
    echo "export COCKPIT_TEST_HEAD_ADDR=$COCKPIT_CLUSTER_HEAD_ADDR"
    echo "export COCKPIT_TEST_CTLD_PORT=$COCKPIT_CLUSTER_CTLD_PORT"
    echo "export COCKPIT_TEST_SLURMD_PORT=$COCKPIT_CLUSTER_SLURMD_PORT"
    # only where slurmctld serves OpenMetrics (25.11+); tests skip without it
    if metrics_enabled "$1"; then
      echo "export COCKPIT_TEST_METRICS_URL=http://$COCKPIT_CLUSTER_HEAD_ADDR:$COCKPIT_CLUSTER_CTLD_PORT/metrics"
    fi
    if [ "$COCKPIT_CLUSTER_PROFILE" = site ]; then
      echo "export COCKPIT_TEST_PARTITIONS=\"gpu debug urgent\""
    else
      echo "export COCKPIT_TEST_PARTITIONS=\"gpu debug\""
    fi
    echo "export COCKPIT_TEST_GPU_TYPE=$COCKPIT_CLUSTER_GPU_TYPE"
    echo "export COCKPIT_TEST_GPUS_PER_NODE=$COCKPIT_CLUSTER_GPUS"
    echo "export COCKPIT_TEST_SSH_PORT=$COCKPIT_CLUSTER_SSH_PORT"
    echo "export COCKPIT_TEST_SSH_USER=root"
    echo "export COCKPIT_TEST_SSH_CONFIG=$SSHD/config"
    echo "export COCKPIT_TEST_SSH_KEY=$SSHD/id_ed25519"
    echo "export COCKPIT_TEST_SSH_KNOWN_HOSTS=$SSHD/known_hosts"
    echo "export COCKPIT_TEST_UNPRIV_USER=$COCKPIT_CLUSTER_USER"
    echo "export COCKPIT_TEST_CLUSTER_RUN=$COCKPIT_CLUSTER_RUN"
    echo "export COCKPIT_TEST_CLUSTER_LOGS=$COCKPIT_CLUSTER_LOGS"
    echo "export COCKPIT_TEST_CLUSTER_STATE=$COCKPIT_CLUSTER_STATE"
    echo "export COCKPIT_TEST_CLUSTER_DIR=$CLUSTER_DIR"
    echo "export COCKPIT_TEST_ACCOUNTING=$COCKPIT_CLUSTER_ACCOUNTING"
    if acct_enabled; then
      echo "export COCKPIT_TEST_DBD_PORT=$COCKPIT_CLUSTER_DBD_PORT"
      echo "export COCKPIT_TEST_DB_PORT=$COCKPIT_CLUSTER_DB_PORT"
      echo "export COCKPIT_TEST_ACCOUNT=$ACCT_ACCOUNT"
      echo "export COCKPIT_TEST_QOS_GPU=$ACCT_QOS"
      echo "export COCKPIT_TEST_QOS_GPU_LIMIT=$ACCT_QOS_GPUS"
    fi
    write_rest_env
  } > "$f.tmp"
  chmod 600 "$f.tmp"  # it holds a JWT (SLURM_JWT): a secret, readable by root alone
  mv "$f.tmp" "$f"
}
