# The "site" test-cluster profile (COCKPIT_CLUSTER_PROFILE=site; sourced by lib-up.sh): nodes
# configured as production sites write them, instead of four alike h100:8 nodes (issue 21):
#   node01  untyped GPUs        Gres=gpu:8
#   node02  two GPU types       Gres=gpu:a100:4,gpu:1g.10gb:4   (a MIG profile is a GRES type name)
#   node03  no GPU, less memory (a CPU-only node; in partitions gpu and debug, as node01)
#   node04  GPUs and shards     Gres=gpu:h100:4,shard:16        (shard GRES exist since Slurm 22.05)
# Partitions (site_partition_lines): gpu (all, default), debug node[01-03] (nodes in two
# partitions), urgent node04 at PriorityTier=10 over gpu's 1, with preempt/partition_prio and
# PreemptMode=REQUEUE: an urgent job on a full node04 requeues the gpu job there (a real
# PREEMPTED record; tests/cluster/site-history makes one).
#   node05+ (COCKPIT_CLUSTER_NODES > 4): untyped gpu:8, as node01
# The fake GPUs are the same /dev/null links (fake-gpu/nvidia0..7): each node names the ones it has.
# It is meant to run BESIDE the default cluster, never instead of it: other-debian's chroot
# (own /etc/hosts, addresses and ports), e.g. COCKPIT_OTHER_PROFILE=site tests/cluster/other-debian.
# The host's own /etc/hosts maps head and nodeNN to the default cluster, so the host runs one.

site_node_lines() {
  local n mem gres
  for n in $(node_names); do
    mem=$COCKPIT_CLUSTER_MEM gres=""
    case $n in
      node02) gres="gpu:a100:4,gpu:1g.10gb:4" ;;
      node03) mem=$((COCKPIT_CLUSTER_MEM / 2)) ;;
      node04) gres="gpu:h100:4,shard:16" ;;
      *) gres="gpu:8" ;;
    esac
    echo "NodeName=$n NodeAddr=$(node_addr "$n") NodeHostname=$n CPUs=$COCKPIT_CLUSTER_CPUS" \
      "RealMemory=$mem${gres:+ Gres=$gres} State=UNKNOWN"
  done
}

site_gres_conf() {
  local n f="$COCKPIT_CLUSTER_RUN/fake-gpu/nvidia"
  echo "# $MARK: written by tests/cluster/up (profile site, tests/cluster/lib-profile.sh); edits are lost."
  echo "# GPUs without File= are dropped (node goes INVAL+DRAIN), so each one is a symlink to /dev/null."
  for n in $(node_names); do
    case $n in
      node02) echo "NodeName=$n Name=gpu Type=a100 File=${f}[0-3]"
              echo "NodeName=$n Name=gpu Type=1g.10gb File=${f}[4-7]" ;;
      node03) ;;
      node04) echo "NodeName=$n Name=gpu Type=h100 File=${f}[0-3]"
              echo "NodeName=$n Name=shard Count=16" ;;
      *) echo "NodeName=$n Name=gpu File=${f}[0-7]" ;;
    esac
  done
}

# Replace the default profile's partition lines (slurm.conf.in) in the rendered slurm.conf.
site_partition_lines() {
  echo "# profile site (lib-profile.sh): urgent preempts gpu/debug jobs on node04 (requeued)"
  echo "PreemptType=preempt/partition_prio"
  echo "PreemptMode=REQUEUE"
  echo "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE PriorityTier=1 State=UP"
  echo "PartitionName=debug Nodes=node[01-03] MaxTime=60 PriorityTier=1 State=UP"
  echo "PartitionName=urgent Nodes=node04 MaxTime=60 PriorityTier=10 State=UP"
}
