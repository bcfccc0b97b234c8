# Accounting for the test cluster: MariaDB and slurmdbd (sourced by up after lib-up.sh).
# Both run in head's UTS namespace, on head's address only, started and stopped by pid like the
# other daemons (down stops them after slurmctld). MariaDB is a server of its own: its own data
# directory under $COCKPIT_CLUSTER_STATE, its own socket and port, no option files read.
# COCKPIT_CLUSTER_ACCOUNTING=0 leaves both out (accounting_storage/none).

DB_DIR="$COCKPIT_CLUSTER_STATE/mariadb"
DB_RUN="$COCKPIT_CLUSTER_RUN/mariadb"           # mysql owns it: socket and pid file
DB_SOCK="$DB_RUN/mariadb.sock"
DB_PASS_FILE="$COCKPIT_CLUSTER_STATE/dbd/storage-pass"
# What up creates in the accounting database (tests read these names from env.sh).
ACCT_ACCOUNT=research                 # cockpit-user's default account (root keeps "root" too)
ACCT_QOS=gpu8                         # a QOS with a GPU limit per user
ACCT_QOS_GPUS=8

acct_enabled() { [ "$COCKPIT_CLUSTER_ACCOUNTING" = 1 ]; }

# What bootstrap_* made, recorded once it is all there: a rerun of up with the daemons
# already running then asks neither MariaDB nor slurmdbd anything (up stays well under 1 s).
ACCT_DONE="$COCKPIT_CLUSTER_STATE/dbd/bootstrapped"
acct_fingerprint() { echo "v1 $COCKPIT_CLUSTER_NAME $ACCT_ACCOUNT root $COCKPIT_CLUSTER_USER $ACCT_QOS $ACCT_QOS_GPUS"; }
acct_done() { [ "$(cat "$ACCT_DONE" 2>/dev/null)" = "$(acct_fingerprint)" ]; }

acct_packages() { acct_enabled && echo mariadb-server slurmdbd; return 0; }

db_pass() {  # a password of our own for slurmdbd's database user, made once, kept in state
  if [ ! -s "$DB_PASS_FILE" ]; then
    mkdir -p "${DB_PASS_FILE%/*}"; chmod 700 "${DB_PASS_FILE%/*}"
    (umask 077; od -An -tx1 -N16 /dev/urandom | tr -d ' \n' > "$DB_PASS_FILE")
  fi
  cat "$DB_PASS_FILE"
}

accounting_lines() {  # the slurm.conf lines for accounting (or for none)
  if ! acct_enabled; then
    printf '%s\n' "AccountingStorageType=accounting_storage/none" "JobAcctGatherType=jobacct_gather/none"
    return 0
  fi
  # jobacct_gather/linux on both versions: cgroup gathering needs a cgroup plugin, and this
  # cluster runs without cgroups (24.11: CgroupPlugin=disabled; 22.05 enforces nothing).
  printf '%s\n' \
    "AccountingStorageType=accounting_storage/slurmdbd" \
    "AccountingStorageHost=$COCKPIT_CLUSTER_HEAD_ADDR" \
    "AccountingStoragePort=$COCKPIT_CLUSTER_DBD_PORT" \
    "AccountingStorageTRES=gres/gpu,gres/gpumem,gres/gpuutil" \
    "AccountingStorageEnforce=associations,limits,qos" \
    "JobAcctGatherType=jobacct_gather/linux" \
    "JobAcctGatherFrequency=10" \
    "# sprio and fair share need priority/multifactor; equal factors keep the order FIFO-like." \
    "PriorityType=priority/multifactor" \
    "PriorityWeightAge=1000" \
    "PriorityWeightFairshare=1000" \
    "PriorityWeightJobSize=100" \
    "PriorityWeightPartition=1000" \
    "PriorityWeightQOS=1000"
}

render_slurmdbd_conf() {  # render_slurmdbd_conf FILE (nothing when accounting is off)
  acct_enabled || return 0
  render slurmdbd.conf.in HEAD_ADDR="$COCKPIT_CLUSTER_HEAD_ADDR" DBD_PORT="$COCKPIT_CLUSTER_DBD_PORT" \
    DB_PORT="$COCKPIT_CLUSTER_DB_PORT" DB_PASS="$(db_pass)" JWT_LINES="$(jwt_lines)" > "$1"
}

db_sql() { mariadb --no-defaults --socket="$DB_SOCK" -u root -N -B -e "$1"; }
db_answers() {
  pid_alive "$PIDS/head.mariadbd.pid" mariadbd \
    || die "mariadbd exited: $(tail -n 3 "$COCKPIT_CLUSTER_LOGS/head.mariadbd.out" 2>/dev/null)"
  db_sql 'SELECT 1' >/dev/null 2>&1
}

start_mariadb() {
  if [ ! -d "$DB_DIR/mysql" ]; then
    rm -rf --one-file-system "$DB_DIR"; mkdir -p "$DB_DIR"; chown mysql:mysql "$DB_DIR"
    mariadb-install-db --no-defaults --user=mysql --datadir="$DB_DIR" --skip-test-db \
      --auth-root-authentication-method=socket >>"$COCKPIT_CLUSTER_LOGS/mariadb-install.out" 2>&1 \
      || die "mariadb-install-db failed: see $COCKPIT_CLUSTER_LOGS/mariadb-install.out"
  fi
  local was_up=0; pid_alive "$PIDS/head.mariadbd.pid" mariadbd && was_up=1
  mkdir -p "$DB_RUN"; chown mysql:mysql "$DB_RUN"
  # --no-defaults first: no /etc/mysql option file, so a site's settings never apply here.
  start_daemon head mariadbd mariadbd --no-defaults --user=mysql --datadir="$DB_DIR" \
    --socket="$DB_SOCK" --bind-address="$COCKPIT_CLUSTER_HEAD_ADDR" --port="$COCKPIT_CLUSTER_DB_PORT" \
    --pid-file="$DB_RUN/mariadb.pid" --skip-name-resolve --innodb-lock-wait-timeout=900
  [ $was_up = 1 ] && acct_done && return 0
  wait_until 30 "mariadbd" db_answers
  local pass u; pass=$(db_pass)
  # slurmdbd connects over TCP to head's address; loopback connections arrive from 127.0.0.1.
  for u in "'slurm'@'localhost'" "'slurm'@'127.0.0.1'" "'slurm'@'$COCKPIT_CLUSTER_HEAD_ADDR'"; do
    db_sql "CREATE USER IF NOT EXISTS $u IDENTIFIED BY '$pass'; GRANT ALL ON slurm_acct_db.* TO $u;"
  done
  db_sql "CREATE DATABASE IF NOT EXISTS slurm_acct_db"
}

dbd_answers() {
  pid_alive "$PIDS/head.slurmdbd.pid" slurmdbd \
    || die "slurmdbd exited: $(tail -n 3 "$COCKPIT_CLUSTER_LOGS/slurmdbd.log" 2>/dev/null)"
  sacctmgr -n -P show cluster format=cluster >/dev/null 2>&1
}

start_slurmdbd() {
  local was_up=0; pid_alive "$PIDS/head.slurmdbd.pid" slurmdbd && was_up=1
  mkdir -p "$COCKPIT_CLUSTER_STATE/dbd"
  start_daemon head slurmdbd slurmdbd -D
  [ $was_up = 1 ] && acct_done && return 0
  wait_until 60 "slurmdbd" dbd_answers
}

sacctmgr_i() { sacctmgr -i -Q "$@" >/dev/null || die "sacctmgr $* failed"; }

# The cluster, an account and the users, each created only when missing (before slurmctld
# starts, so that it reads them at once).
bootstrap_accounting() {
  acct_done && return 0
  local name=$COCKPIT_CLUSTER_NAME u assocs
  sacctmgr -n -P show cluster format=cluster | grep -qx "$name" || sacctmgr_i add cluster "$name"
  assocs=$(sacctmgr -n -P show assoc where cluster="$name" format=account,user)
  grep -qx "$ACCT_ACCOUNT|" <<<"$assocs" || sacctmgr_i add account "$ACCT_ACCOUNT" cluster="$name" \
    Description="test cluster research account" Organization=cockpit
  for u in root "$COCKPIT_CLUSTER_USER"; do
    grep -qx "$ACCT_ACCOUNT|$u" <<<"$assocs" || sacctmgr_i add user "$u" account="$ACCT_ACCOUNT" cluster="$name"
  done
  # root's default account stays "root" (made with the cluster); the test user's is research.
  grep -qx "root|root" <<<"$assocs" || sacctmgr_i add user root account=root cluster="$name"
  return 0
}

gpu_tres_known() { sacctmgr -n -P show tres format=type,name 2>/dev/null | grep -qx "gres|gpu"; }

# The QOS with a GPU limit, once slurmctld has registered the gres/gpu TRES (before that,
# sacctmgr refuses the limit: "no TRES known by type gres/gpu").
bootstrap_qos() {
  acct_enabled || return 0
  acct_done && return 0
  local name=$COCKPIT_CLUSTER_NAME
  wait_until 30 "slurmctld to register the gres/gpu TRES" gpu_tres_known
  sacctmgr -n -P show qos format=name | grep -qx "$ACCT_QOS" || sacctmgr_i add qos "$ACCT_QOS" \
    MaxTRESPerUser="gres/gpu=$ACCT_QOS_GPUS" Description="test cluster: at most $ACCT_QOS_GPUS GPUs per user"
  # Both may use it (sbatch --qos=gpu8); their default QOS stays "normal".
  if sacctmgr -n -P show assoc where cluster="$name" users="root,$COCKPIT_CLUSTER_USER" format=qos \
      | grep -vq "$ACCT_QOS"; then
    sacctmgr_i modify user where name="root,$COCKPIT_CLUSTER_USER" cluster="$name" \
      set qos="normal,$ACCT_QOS" defaultqos=normal
  fi
  acct_fingerprint > "$ACCT_DONE"
}

# slurmdbd sends association and QOS updates back to slurmctld at the address slurmctld
# connected from, and on loopback the kernel picks 127.0.0.1 as the source whatever the
# destination. Where head is another loopback address (other-debian: 127.0.20.254) nothing
# listens there, so updates never arrive ("update cluster: cockpit at 127.0.0.1(6917):
# Connection refused"). A host route for head's own address with itself as the source fixes
# it; down removes it (only what up added: the marker file).
ROUTE_MARK="$COCKPIT_CLUSTER_RUN/route-head"
add_head_route() {
  acct_enabled && [ "$COCKPIT_CLUSTER_HEAD_ADDR" != 127.0.0.1 ] || return 0
  local a=$COCKPIT_CLUSTER_HEAD_ADDR
  ip route show table local "$a/32" | grep -q "src $a" && return 0
  ip route add local "$a/32" dev lo scope host src "$a" table local || die "cannot add the route for $a"
  echo "$a" > "$ROUTE_MARK"
}

start_accounting() {
  acct_enabled || return 0
  add_head_route
  start_mariadb
  start_slurmdbd
  bootstrap_accounting
}
