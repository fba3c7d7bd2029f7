#!/usr/bin/env bash
# e2e_swap_slurm: a job of a private one-node Slurm (munged, slurmctld, slurmd from Debian's packages; cgroup v1 with ConstrainRAMSpace and ConstrainSwapSpace) swaps to the device of comex swap up (embedded memnode): srun --mem=64M of a Python program that touches 160 MiB prints what it prints without a limit, its job cgroup's memsw peak is above its RAM limit, and the device wrote at least 64 MiB to its memnode during the job, with no failed requests; Slurm's daemons, its cgroups and the device are gone afterwards.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
. "$src/tests/progs/swapdev.sh"
echo "e2e_swap_slurm: comex swap up (256 MiB, embedded memnode); a private one-node Slurm runs srun --mem=64M of a Python program touching 160 MiB; down"

# What Slurm needs here, else skip (scripts/deps.sh installs the packages).
for c in munged munge unmunge slurmctld slurmd srun sinfo scontrol; do
  command -v "$c" >/dev/null || { echo "skip: $c is not installed (scripts/deps.sh installs munge, slurmctld, slurmd, slurm-client)"; exit 77; }
done
plugdir=$(dirname "$(dpkg -L slurm-wlm-basic-plugins 2>/dev/null | grep '/task_cgroup\.so$' | head -n 1)")
for so in cgroup_v1 proctrack_cgroup task_cgroup; do
  [ -e "$plugdir/$so.so" ] || { echo "skip: Slurm's plugin $so.so is not installed (slurm-wlm-basic-plugins)"; exit 77; }
done
# Slurm 22.05's cgroup/v1 plugin: the v1 controllers it uses, and swap accounting
for c in memory freezer cpuset devices; do
  [ "$(stat -f -c %T /sys/fs/cgroup/$c 2>/dev/null)" = cgroupfs ] ||
    { echo "skip: no cgroup v1 $c controller at /sys/fs/cgroup/$c (Slurm's cgroup/v1 plugin needs it)"; exit 77; }
done
[ -e /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes ] ||
  { echo "skip: no memory.memsw.* in cgroup v1 (swap accounting off: boot with swapaccount=1)"; exit 77; }
host=$(hostname -s)
getent hosts "$host" >/dev/null || { echo "skip: the hostname $host does not resolve (slurmctld needs it)"; exit 77; }
py=$(python3 -c 'import sys; print(sys.executable)')
"$py" -c 'import random; random.Random(0).randbytes(1)' 2>/dev/null || { echo "skip: $py has no random.randbytes (Python < 3.9)"; exit 77; }
# slurmctld's and slurmd's ports: the first free pair (SO_REUSEADDR, as Slurm binds)
ports_free() {
  python3 -c 'import socket, sys
for p in sys.argv[1:]:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("0.0.0.0", int(p)))
    except OSError:
        sys.exit(1)
    finally:
        s.close()' "$@"
}
ctld_port=
for base in 16817 17817 18817 19817 26817; do
  ports_free $base $((base + 1)) && { ctld_port=$base; slurmd_port=$((base + 1)); break; }
done
[ -n "$ctld_port" ] || { echo "skip: no free pair of ports for slurmctld/slurmd (tried 16817/16818 ... 26817/26818)"; exit 77; }

# The node's name is unique to this run: Debian's Slurm names its cgroups
# slurm_<node> (multiple-slurmd build), so the cgroups of this run are told
# apart from anyone else's. Plain "slurm" cgroups (another build) are removed
# only when they were not there before.
node=comex$$
slurm_cg_pre=()
for d in /sys/fs/cgroup/*/slurm /sys/fs/cgroup/*/slurm_"$node"; do [ -d "$d" ] && slurm_cg_pre+=("$d"); done
slurm_cgs() { # the slurm cgroup directories this run created
  local d p pre
  for d in /sys/fs/cgroup/*/slurm /sys/fs/cgroup/*/slurm_"$node"; do
    [ -d "$d" ] || continue
    pre=0; for p in "${slurm_cg_pre[@]}"; do [ "$p" = "$d" ] && pre=1; done
    [ $pre = 0 ] && echo "$d"
  done
}
slurm_daemons=() # in start order: munged, slurmctld, slurmd
stop_pid() { # TERM, a bounded wait, KILL
  local i
  kill -TERM "$1" 2>/dev/null || return 0
  for i in $(seq 1 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null; wait "$1" 2>/dev/null
}
slurm_stop() {
  local i d p left
  [ -n "${srun_pid:-}" ] && stop_pid "$srun_pid"
  for ((i = ${#slurm_daemons[@]} - 1; i >= 0; i--)); do stop_pid "${slurm_daemons[i]}"; done
  slurm_daemons=()
  # slurmstepd and the job's tasks are not our children (slurmstepd double-forks)
  for i in $(seq 1 50); do
    left=$(slurm_cgs)
    [ -z "$left" ] && break
    for d in $left; do
      for p in $(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u); do kill -KILL "$p" 2>/dev/null; done
      find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
    done
    sleep 0.1
  done
  left=$(slurm_cgs)
  [ -z "$left" ] || echo "warning: Slurm's cgroups left: $left"
}
trap 'slurm_stop; swap_cleanup; cleanup' EXIT

swap_up --size 256M || finish

# A private Slurm: everything under $dir, root as SlurmUser, nothing system-wide.
mkdir -m 700 "$dir/state" "$dir/spool" "$dir/log"
mkdir -m 711 "$dir/munge"
head -c 1024 /dev/urandom >"$dir/munge/munge.key"
chmod 400 "$dir/munge/munge.key"
msock=$dir/munge/munge.socket
for v in $(compgen -e SLURM_); do unset "$v"; done
export SLURM_CONF=$dir/slurm.conf
topo=$(slurmd -C 2>/dev/null | head -n 1 | tr ' ' '\n' | grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | tr '\n' ' ')
[ -n "$topo" ] || topo="CPUs=$(nproc) "
mem_mb=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
realmem=$(( mem_mb > 2048 ? mem_mb - 1024 : mem_mb / 2 )) # at most what slurmd finds
cat >"$SLURM_CONF" <<EOF
ClusterName=comexswap
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$msock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PluginDir=$plugdir
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MailProg=/bin/true
NodeName=$node NodeHostname=$host NodeAddr=127.0.0.1 ${topo}RealMemory=$realmem State=UNKNOWN
PartitionName=comexswap Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
# next to $SLURM_CONF; the step may use 64M of RAM and 3 x 64M of swap
cat >"$dir/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
CgroupAutomount=no
ConstrainCores=no
ConstrainDevices=no
ConstrainRAMSpace=yes
AllowedRAMSpace=100
ConstrainSwapSpace=yes
AllowedSwapSpace=300
MaxSwapPercent=100
EOF

# touch.py MiB: MiB of deterministic pseudo-random data, then its hash
cat >"$dir/touch.py" <<'EOF'
import hashlib, random, sys
mib = int(sys.argv[1])
buf = bytearray(mib << 20)
for i in range(mib):
    buf[i << 20:(i + 1) << 20] = random.Random(i).randbytes(1 << 20)
print(mib, hashlib.sha256(buf).hexdigest())
EOF
# the job: touch.py's output to job.touch, then its step cgroup's numbers
# (the limits are on the step's cgroup; its task_N child has none)
cat >"$dir/job.sh" <<EOF
#!/bin/bash
"$py" "$dir/touch.py" 160 >"$dir/job.touch" || exit \$?
cg=\$(awk -F: '\$2 == "memory" {print \$3}' /proc/self/cgroup)
d=/sys/fs/cgroup/memory\${cg%/task_*}
echo "cgroup \${cg%/task_*}"
for f in memory.limit_in_bytes memory.memsw.limit_in_bytes memory.max_usage_in_bytes memory.memsw.max_usage_in_bytes; do
  echo "\$f \$(cat "\$d/\$f")"
done
EOF
chmod 755 "$dir/job.sh"
native touch "$py" "$dir/touch.py" 160 || { fail native "touch.py failed without a limit: $(tail -n 2 "$dir/touch.native-err")"; finish; }

logs() { local f; for f in "$dir"/log/*; do echo "  ---- $(basename "$f")"; tail -n 15 "$f" | sed 's/^/    /'; done; }
# wait_up WHAT CMD...: until CMD succeeds; false when a daemon ended or the hang guard passed
wait_up() {
  local what=$1 i p; shift
  for i in $(seq 1 $((hang_guard * 10))); do
    "$@" >/dev/null 2>&1 && return 0
    for p in "${slurm_daemons[@]}"; do kill -0 "$p" 2>/dev/null || { fail "$what" "a daemon (pid $p) ended before $what"; logs; return 1; }; done
    sleep 0.1
  done
  fail "$what" "not after ${hang_guard}s"; logs; return 1
}
"${die_with_test[@]}" munged -F -f --key-file="$dir/munge/munge.key" --socket="$msock" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" \
  >"$dir/log/munged.out" 2>&1 &
pids+=($!); slurm_daemons+=($!)
munge_ok() { munge -n -S "$msock" | unmunge -S "$msock"; }
wait_up munged munge_ok || finish
"${die_with_test[@]}" slurmctld -D -i -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
pids+=($!); slurm_daemons+=($!)
wait_up slurmctld scontrol ping || finish
"${die_with_test[@]}" slurmd -D -N "$node" -f "$SLURM_CONF" >"$dir/log/slurmd.out" 2>&1 &
pids+=($!); slurm_daemons+=($!)
node_idle() { sinfo -h -n "$node" -o %T | grep -qx idle; }
wait_up slurmd node_idle || finish
echo "ok: slurm: munged, slurmctld (port $ctld_port), slurmd (port $slurmd_port), node $node idle"

before=$(counter bytes_written)
timeout -k 10 "$hang_guard" srun --quiet -N1 -n1 --mem=64M -J comex-swap \
  -o "$dir/job.out" -e "$dir/job.err" "$dir/job.sh" >"$dir/srun.out" 2>&1 &
srun_pid=$!; pids+=("$srun_pid")
rc=0; wait "$srun_pid" || rc=$?
srun_pid=
after=$(counter bytes_written)
stat_of() { awk -v k="$1" '$1 == k {print $2}' "$dir/job.out"; }
if [ $rc -ne 0 ]; then
  [ $rc -eq 124 ] && fail job "srun did not return after ${hang_guard}s" || fail job "srun exit $rc"
  cat "$dir/srun.out" "$dir/job.err" 2>/dev/null | tail -n 5 | sed 's/^/    /'; logs
elif ! cmp -s "$dir/touch.native" "$dir/job.touch"; then
  fail job "output differs from the run without a limit: '$(cat "$dir/job.touch")' vs '$(cat "$dir/touch.native")'"
else
  echo "ok: job: same output at --mem=64M: $(cat "$dir/job.touch")"
  lim=$(stat_of memory.limit_in_bytes); swlim=$(stat_of memory.memsw.limit_in_bytes)
  peak=$(stat_of memory.max_usage_in_bytes); swpeak=$(stat_of memory.memsw.max_usage_in_bytes)
  if [ -z "$lim" ] || [ -z "$swpeak" ] || [ "$lim" -gt $((64 << 20)) ]; then
    fail cgroup "the job's cgroup ($(stat_of cgroup)) has no 64M limit: $(tr '\n' ' ' <"$dir/job.out")"
  elif [ "$swpeak" -le "$lim" ]; then
    fail cgroup "memsw peak $swpeak is not above the RAM limit $lim: nothing swapped"
  else
    echo "ok: cgroup $(stat_of cgroup): limit $((lim >> 20)) MiB, memsw limit $((swlim >> 20)) MiB, peak $((peak >> 20)) MiB, memsw peak $((swpeak >> 20)) MiB"
  fi
  if [ "$after" -lt $((before + (64 << 20))) ]; then
    fail written "only $(( (after - before) >> 20 )) MiB written to $device during the job ($before -> $after bytes)"
  else
    echo "ok: written: $(( (after - before) >> 20 )) MiB to $device (its embedded memnode) during the job"
  fi
fi
[ "$(counter errors)" -eq 0 ] || fail errors "the device counted $(counter errors) failed requests"

slurm_stop
[ -z "$(slurm_cgs)" ] && echo "ok: slurm stopped, its cgroups removed"
swap_down && echo "ok: down"
finish
