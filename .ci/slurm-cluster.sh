#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for the tests of `ioi-run slurm ...`
# (tests/it/slurm.rs use it when `sinfo` answers).
#
#   .ci/slurm-cluster.sh start   install slurmctld/slurmd/slurm-client/munge if missing, write
#                                the configuration, start munged, slurmctld and slurmd
#   .ci/slurm-cluster.sh stop    cancel every job, stop the three daemons (by the pids they
#                                recorded), leaving nothing running
#   .ci/slurm-cluster.sh status
#
# There is no systemd: package scripts must not start daemons (a temporary policy-rc.d that
# exits 101), and the daemons are started by hand. The cgroup plugins fail on a hybrid v1 host,
# hence proctrack/linuxproc and task/none. Needs root.
set -euo pipefail

STATE=/run/ioi-run-slurm
CONF=/etc/slurm/slurm.conf
MARKER="# written by ioi-run .ci/slurm-cluster.sh"
HOST=$(hostname -s)

log() { echo "slurm-cluster: $*" >&2; }

install_packages() {
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
    command -v sbatch >/dev/null && command -v munged >/dev/null; then
    return
  fi
  log "installing slurmctld slurmd slurm-client munge"
  local own_policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    own_policy=1
  fi
  apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client munge \
    >/dev/null
  if ((own_policy)); then rm -f /usr/sbin/policy-rc.d; fi
}

write_config() {
  if [[ -e $CONF ]] && ! grep -qF "$MARKER" "$CONF"; then
    log "$CONF exists and was not written by this script: using it as it is"
    return
  fi
  # CPUs and memory as slurmd sees them, so that the node is never drained for a mismatch.
  local node
  node=$(slurmd -C | head -1 | sed -e "s/^NodeName=[^ ]*/NodeName=$HOST/")
  mkdir -p /etc/slurm "$STATE/spool/ctld" "$STATE/spool/d"
  cat >"$CONF" <<EOF
$MARKER
ClusterName=ioi-run-ci
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/spool/ctld
SlurmdSpoolDir=$STATE/spool/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=batch_sched_delay=0
DependencyParameters=kill_invalid_depend
ReturnToService=2
MpiDefault=none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=30
KillWait=5
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
}

# The pid recorded in FILE if that process is alive and runs COMMAND.
live_pid() {
  local file=$1 command=$2 pid
  [[ -r $file ]] || return 1
  pid=$(tr -dc 0-9 <"$file")
  [[ -n $pid && -r /proc/$pid/comm ]] || return 1
  [[ $(cat "/proc/$pid/comm") == "$command" ]] || return 1
  echo "$pid"
}

start() {
  [[ $(id -u) == 0 ]] || { log "needs root"; exit 1; }
  install_packages
  mkdir -p "$STATE"
  write_config
  # munged: socket folder 0755, key folder 0700, run as its own user.
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge
  chmod 0755 /run/munge
  chmod 0700 /etc/munge
  [[ -s /etc/munge/munge.key ]] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=128 2>/dev/null; chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key; }
  if ! live_pid /run/munge/munged.pid munged >/dev/null; then
    runuser -u munge -- munged --pid-file=/run/munge/munged.pid
    cp /run/munge/munged.pid "$STATE/munged.pid"
  fi
  if ! live_pid "$STATE/slurmctld.pid" slurmctld >/dev/null; then
    slurmctld -c -f "$CONF"   # -c: forget jobs of an earlier run
  fi
  if ! live_pid "$STATE/slurmd.pid" slurmd >/dev/null; then
    slurmd -N "$HOST" -f "$CONF"
  fi
  local i
  for ((i = 0; i < 100; i++)); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      log "up: $(sinfo -h -o '%N %c CPUs %m MB %T')"
      return 0
    fi
    # A node left down by an earlier run is brought back.
    scontrol update nodename="$HOST" state=resume >/dev/null 2>&1 || true
    sleep 0.2
  done
  log "the node did not come up; see $STATE/slurmctld.log and $STATE/slurmd.log"
  sinfo >&2 || true
  exit 1
}

stop_pid() {
  local name=$1 file=$2 pid i
  pid=$(live_pid "$file" "$name") || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

stop() {
  if command -v scancel >/dev/null && live_pid "$STATE/slurmctld.pid" slurmctld >/dev/null; then
    scancel --full --user=root 2>/dev/null || true
    local i
    for ((i = 0; i < 50; i++)); do
      [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break
      sleep 0.2
    done
  fi
  stop_pid slurmd "$STATE/slurmd.pid"
  stop_pid slurmctld "$STATE/slurmctld.pid"
  stop_pid munged "$STATE/munged.pid"
  # Job steps left behind by slurmd (linuxproc cannot always reap them).
  local pid
  for pid in $(pgrep -x slurmstepd || true); do kill -KILL "$pid" 2>/dev/null || true; done
  log "stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) sinfo && squeue ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
