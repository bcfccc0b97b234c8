# Shared settings and helpers for tests/cluster/up and tests/cluster/down (sourced, not run).
# Every setting can be overridden from the environment, so a second instance (for example in a
# Debian 13 chroot, see other-debian) can run beside the first on other addresses and ports.

CLUSTER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

: "${COCKPIT_CLUSTER_NODES:=4}"                       # number of slurmd nodes (2-99)
: "${COCKPIT_CLUSTER_NET:=127.0.10}"                  # nodeNN listens on $NET.N
: "${COCKPIT_CLUSTER_HEAD_ADDR:=127.0.0.1}"           # login host "head" (slurmctld, sshd)
: "${COCKPIT_CLUSTER_CTLD_PORT:=6817}"
: "${COCKPIT_CLUSTER_SLURMD_PORT:=6818}"
: "${COCKPIT_CLUSTER_SSH_PORT:=2222}"
: "${COCKPIT_CLUSTER_CPUS:=16}"
: "${COCKPIT_CLUSTER_MEM:=64000}"                     # MB per node
: "${COCKPIT_CLUSTER_GPUS:=8}"
: "${COCKPIT_CLUSTER_GPU_TYPE:=h100}"
: "${COCKPIT_CLUSTER_NAME:=cockpit}"
: "${COCKPIT_CLUSTER_CONF_DIR:=/etc/slurm}"
: "${COCKPIT_CLUSTER_RUN:=/run/cockpit-cluster}"
: "${COCKPIT_CLUSTER_STATE:=/var/spool/cockpit-cluster}"
: "${COCKPIT_CLUSTER_LOGS:=/var/log/cockpit-cluster}"
: "${COCKPIT_CLUSTER_USER:=cockpit-user}"             # non-root, non-operator test user
: "${COCKPIT_CLUSTER_ACCOUNTING:=1}"                  # 1: slurmdbd on MariaDB; 0: no accounting
: "${COCKPIT_CLUSTER_PROFILE:=default}"               # default: alike h100:8 nodes; site: lib-profile.sh
# Derived from the controller's port, so a second instance (other-debian) gets its own too.
: "${COCKPIT_CLUSTER_DBD_PORT:=$((COCKPIT_CLUSTER_CTLD_PORT + 2))}"   # slurmdbd (6819)
: "${COCKPIT_CLUSTER_DB_PORT:=$((COCKPIT_CLUSTER_CTLD_PORT - 3510))}"  # its MariaDB (3307)

# bash 5.2 would expand & in ${var//pat/rep} replacements; templates must be copied literally.
shopt -u patsub_replacement 2>/dev/null || true

MARK="COCKPIT-CLUSTER-GENERATED"
HOSTS_BEGIN="# >>> cockpit-cluster ${COCKPIT_CLUSTER_RUN} >>>"
HOSTS_END="# <<< cockpit-cluster ${COCKPIT_CLUSTER_RUN} <<<"
PIDS="$COCKPIT_CLUSTER_RUN/pids"
NSDIR="$COCKPIT_CLUSTER_RUN/ns"
SSHD="$COCKPIT_CLUSTER_RUN/ssh"
SLURM_CONF="$COCKPIT_CLUSTER_CONF_DIR/slurm.conf"
export SLURM_CONF

log() { printf '%s %s\n' "[cluster]" "$*" >&2; }
die() { printf '%s %s\n' "[cluster] error:" "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root"

# Loopback only: refuse any address outside 127.0.0.0/8 before anything is configured.
case "$COCKPIT_CLUSTER_NET." in 127.*) ;; *) die "COCKPIT_CLUSTER_NET=$COCKPIT_CLUSTER_NET is not in 127.0.0.0/8";; esac
case "$COCKPIT_CLUSTER_HEAD_ADDR" in 127.*) ;; *) die "COCKPIT_CLUSTER_HEAD_ADDR=$COCKPIT_CLUSTER_HEAD_ADDR is not in 127.0.0.0/8";; esac
case "$COCKPIT_CLUSTER_PROFILE" in default|site) ;; *) die "COCKPIT_CLUSTER_PROFILE=$COCKPIT_CLUSTER_PROFILE must be default or site";; esac
case "$COCKPIT_CLUSTER_ACCOUNTING" in 0|1) ;; *) die "COCKPIT_CLUSTER_ACCOUNTING=$COCKPIT_CLUSTER_ACCOUNTING must be 0 or 1";; esac
[[ "$COCKPIT_CLUSTER_NODES" =~ ^[0-9]+$ ]] && [ "$COCKPIT_CLUSTER_NODES" -ge 2 ] && [ "$COCKPIT_CLUSTER_NODES" -le 99 ] \
  || die "COCKPIT_CLUSTER_NODES=$COCKPIT_CLUSTER_NODES must be 2-99"

node_names() { local i; for ((i = 1; i <= COCKPIT_CLUSTER_NODES; i++)); do printf 'node%02d\n' "$i"; done; }
node_addr() { echo "$COCKPIT_CLUSTER_NET.$((10#${1#node}))"; }
host_addr() { if [ "$1" = head ]; then echo "$COCKPIT_CLUSTER_HEAD_ADDR"; else node_addr "$1"; fi; }
last_node() { printf 'node%02d' "$COCKPIT_CLUSTER_NODES"; }

slurm_version() { dpkg-query -W -f '${Version}' slurmctld 2>/dev/null | sed 's/-.*//'; }

# version_ge A B: true when Slurm version A >= B (major.minor compare is enough here).
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

# Debian ships daemons behind alternatives (/usr/sbin/slurmctld -> slurmctld-wlm):
# /proc/PID/exe names the real file, so compare against readlink -f.
real_bin() { readlink -f "$(command -v "$1" || echo "/usr/sbin/$1")"; }

# pid_alive PIDFILE BIN: the pid in PIDFILE runs BIN (zombies count as dead, see pitfall 6).
pid_alive() {
  local pid state
  [ -s "$1" ] || return 1
  pid=$(cat "$1")
  [ -d "/proc/$pid" ] || return 1
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ "$state" != Z ] || return 1
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(real_bin "$2")" ]
}

root_uts() { readlink /proc/1/ns/uts; }
