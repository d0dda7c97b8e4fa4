#!/usr/bin/env bash
# Runs headscan as a Slurm job array on a one-node cluster started here, and checks that the report
# merged from 3 shards is the single run's:
#   tests/slurm_cluster.sh HEADSCAN MODEL CORPUS [HEADSCAN OPTION...]
# The options go to the shards and to the single run alike.
#
# Installs Debian's slurm-wlm and munge when missing (scripts/install_packages.sh). Then, in a
# temporary directory, starts its own munged (own key, socket, pid file and log) and a slurmctld and
# slurmd with their own slurm.conf, state, spool, logs and free ports on 127.0.0.1, so it neither
# needs nor disturbs a Slurm or MUNGE already set up on the machine. It submits
# scripts/slurm/submit.sh --shards 3 --wait, runs `headscan MODEL CORPUS -o single`, and compares:
# heads.json with tests/fixtures/compare_heads.py (scores within 1e-6, everything else identical,
# the run section and the paths ignored), the merge wrote every file the single run did, and the
# same idf.txt. On exit it cancels its jobs, stops the daemons it started (by their pid files) and
# removes the directory; HEADSCAN_SLURM_KEEP=1 keeps the directory.
#
# Needs root (slurmd runs the jobs as root here). HEADSCAN_SLURM_TIMEOUT: seconds for the jobs
# (default 300). Exit codes: 0 passed, 1 failed, 2 bad usage, 77 skipped: not root, or no slurm-wlm
# or munge package to install.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if (($# < 3)); then
  echo "usage: tests/slurm_cluster.sh HEADSCAN MODEL CORPUS [HEADSCAN OPTION...]" >&2
  exit 2
fi
headscan=$(realpath "$1") model=$(realpath "$2") corpus=$(realpath "$3")
shift 3
options=("$@")

now() { date +%s.%N; }
since() { awk -v start="$1" -v end="$(now)" 'BEGIN { printf "%.1f", end - start }'; }

if (($(id -u) != 0)); then
  echo "slurm cluster: skipped: needs root to run slurmd (and to install slurm-wlm and munge)"
  exit 77
fi

# --- Slurm and MUNGE from Debian's packages -------------------------------------------------------
tools=(slurmctld slurmd sbatch sinfo squeue scontrol scancel munged munge unmunge)
have_tools() {
  local tool
  for tool in "${tools[@]}"; do command -v "$tool" >/dev/null || return 1; done
}
if ! have_tools; then
  # Two of these tests at once (ctest -j) take turns at apt-get.
  exec 9>/tmp/headscan-slurm-install.lock
  flock 9
  source "$root/scripts/install_packages.sh"
  if ! have_tools && { ! install_packages slurm-test slurm-wlm munge || ! have_tools; }; then
    for package in slurm-wlm munge; do
      candidate=$(apt-cache policy "$package" 2>/dev/null | sed -n 's/^ *Candidate: //p')
      if [[ -z $candidate || $candidate == "(none)" ]]; then
        echo "slurm cluster: skipped: no $package package to install"
        exit 77
      fi
    done
    echo "slurm cluster: FAILED: could not install slurm-wlm and munge" >&2
    exit 1
  fi
  exec 9>&-
fi

# --- The cluster's directory, and stopping everything on exit -------------------------------------
# A short path under /tmp: the MUNGE socket's path must fit a socket address (108 bytes), and
# munged wants every directory above its socket searchable by all.
tmp=$(mktemp -d /tmp/headscan-slurm.XXXXXX)
chmod 755 "$tmp"
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/log" "$tmp/run"
chmod 755 "$tmp/munge"

# Jobs and tools must talk to this cluster only, whatever the environment says.
while read -r name; do unset "$name"; done < <(compgen -e | grep -E '^(SLURM|SBATCH|SALLOC|SRUN)_' || true)
unset HEADSCAN_SBATCH_OPTIONS
export SLURM_CONF=$tmp/slurm.conf

stop_daemons() {  # NAME:PID_FILE...: TERM to all at once, KILL after 10 s; fails if one is still there
  local daemon name pid tries alive pids=()
  for daemon in "$@"; do
    name=${daemon%%:*}
    pid=$(cat "${daemon#*:}" 2>/dev/null) || continue
    # Only the process the pid file names, and only while it is still that daemon.
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$name" ]] || continue
    kill "$pid" 2>/dev/null && pids+=("$pid")
  done
  for ((tries = 0; tries < 100; tries++)); do
    alive=0
    for pid in "${pids[@]}"; do [[ -e /proc/$pid ]] && alive=1; done
    ((alive)) || return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do
    [[ -e /proc/$pid ]] || continue
    echo "slurm cluster: $(cat "/proc/$pid/comm" 2>/dev/null) ($pid) did not stop in 10 s: killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
  done
  return 1
}
show_logs() {
  local file
  for file in "$tmp"/out/logs/*.out "$tmp"/log/*.log "$tmp"/munge/munged.log; do
    [[ -e $file ]] || continue
    echo "---- $file (last 40 lines)"
    tail -n 40 "$file"
  done
}
cleanup() {
  local status=$? pid tries
  trap - EXIT
  if [[ -s $tmp/run/slurmctld.pid ]]; then
    scancel --quiet --full --user=root >/dev/null 2>&1 || true
    for ((tries = 0; tries < 50; tries++)); do
      [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break
      sleep 0.2
    done
  fi
  ((status == 0)) || show_logs
  stop_daemons "slurmd:$tmp/run/slurmd.pid" "slurmctld:$tmp/run/slurmctld.pid" \
    "munged:$tmp/munge/munged.pid" || status=1
  # A job process the cancel missed has this cluster's SLURM_CONF in its environment; this
  # shell's own children (grep, cut) must not.
  export -n SLURM_CONF
  while read -r pid; do
    echo "slurm cluster: killing leftover job process $pid ($(cat "/proc/$pid/comm" 2>/dev/null))" >&2
    kill -KILL "$pid" 2>/dev/null || true
    status=1
  done < <(grep -lsz "^SLURM_CONF=$tmp/slurm.conf\$" /proc/[0-9]*/environ | cut -d/ -f3)
  if [[ ${HEADSCAN_SLURM_KEEP:-0} == 1 ]]; then
    echo "slurm cluster: kept $tmp"
  else
    rm -rf "$tmp"
  fi
  exit "$status"
}
trap cleanup EXIT
fail() {
  echo "slurm cluster: FAILED: $1" >&2
  exit 1
}

# --- MUNGE: its own key and socket ----------------------------------------------------------------
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
socket=$tmp/munge/munge.socket
start=$(now)
munged --socket="$socket" --key-file="$tmp/munge/munge.key" --pid-file="$tmp/munge/munged.pid" \
  --log-file="$tmp/munge/munged.log" --seed-file="$tmp/munge/munged.seed" ||
  fail "munged did not start"
for ((tries = 0; ; tries++)); do
  munge -n -S "$socket" 2>/dev/null | unmunge -S "$socket" >/dev/null 2>&1 && break
  ((tries < 50)) || fail "munged does not answer on $socket"
  sleep 0.1
done

# --- slurm.conf: one node, this machine, on 127.0.0.1 ---------------------------------------------
free_port() {  # a port below the ephemeral range that nothing on 127.0.0.1 listens on
  local port
  while :; do
    port=$((10000 + RANDOM % 20000))
    [[ $port == "${1:-}" ]] && continue
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
}
controller_port=$(free_port)
node_port=$(free_port "$controller_port")
# The node as slurmd sees it (CPUs, sockets, cores, threads, memory), else just the CPUs.
hardware=$(slurmd -C 2>/dev/null | sed -n '1s/^NodeName=[^ ]* //p')
[[ -n $hardware ]] || hardware="CPUs=$(nproc)"

cat >"$SLURM_CONF" <<EOF
# A one-node cluster for tests/slurm_cluster.sh: everything under $tmp, on 127.0.0.1.
ClusterName=headscantest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$controller_port
SlurmdPort=$node_port
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdTimeout=30
# sbatch --wait polls after 2 s, then 8, then 32 s, each longer step taken only while the
# sleep is under MinJobAge/2: at 4 it polls every 2 s (at the default 300, a job took 30 s more).
MinJobAge=4
NodeName=localhost NodeAddr=127.0.0.1 $hardware State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF

slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" -N localhost || fail "slurmd did not start"
for ((tries = 0; ; tries++)); do
  state=$(sinfo -h -n localhost -o %t 2>/dev/null || true)
  [[ $state == idle ]] && break
  ((tries < 300)) || fail "the node is not idle after 30 s (state: ${state:-none})"
  sleep 0.1
done
echo "slurm cluster: munged, slurmctld and slurmd up, node idle, in $(since "$start") s (ports $controller_port, $node_port)"

# --- 3 shards and a merge, then one single run ----------------------------------------------------
out=$tmp/out
start=$(now)
timeout "${HEADSCAN_SLURM_TIMEOUT:-300}" "$root/scripts/slurm/submit.sh" --shards 3 --wait \
  --headscan "$headscan" "$model" "$corpus" "$out" -- "${options[@]}" ||
  fail "submit.sh --shards 3 --wait did not succeed (exit $?)"
echo "slurm cluster: 3 shards and the merge done in $(since "$start") s"
shards=$(find "$out/shards" -mindepth 1 -maxdepth 1 -type d | wc -l)
((shards == 3)) || fail "expected 3 shard directories in $out/shards, found $shards"

start=$(now)
"$headscan" "$model" "$corpus" -o "$tmp/single" "${options[@]}" || fail "the single run failed"
echo "slurm cluster: single run in $(since "$start") s"

# --- The merged report is the single run's --------------------------------------------------------
python3 "$root/tests/fixtures/compare_heads.py" "$tmp/single/heads.json" "$out/report/heads.json" ||
  fail "the merged heads.json differs from the single run's"
not_merged=$(cd "$tmp/single" && find . -type f | while read -r file; do
  [[ -e $out/report/$file ]] || echo "${file#./}"
done)
[[ -z $not_merged ]] || fail "files the single run wrote and the merge did not: $(echo "$not_merged" | tr '\n' ' ')"
if [[ -e $tmp/single/idf.txt ]]; then
  cmp "$tmp/single/idf.txt" "$out/report/idf.txt" || fail "the merged idf.txt differs from the single run's"
fi
echo "slurm cluster: the report merged from 3 shards equals the single run"
