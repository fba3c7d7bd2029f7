#!/usr/bin/env bash
# e2e_memnode_elastic: a memnode with --host-reserve in a memory cgroup gives free pool memory back when a memory hog in its cgroup leaves the host less than the reserve, and takes it back when the hog is gone, while a program keeps its pages there and ends with the native output.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
. "$src/tests/progs/memnodes.sh"
echo "e2e_memnode_elastic: memnode (256 MiB pool, host-reserve 160 MiB) in a 768 MiB cgroup, a 360 MiB hog beside it, prog_gate 96 MiB at 24M local"

[ "$(id -u)" -eq 0 ] || { echo "skip: creating a memory cgroup needs root"; exit 77; }
# A memory cgroup of our own: v2 under our group when it delegates memory,
# else under the root; v1 under our memory group.
own2=$(sed -n 's/^0:://p' /proc/self/cgroup); own1=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
  base=/sys/fs/cgroup$own2
  grep -qw memory "$base/cgroup.subtree_control" 2>/dev/null || base=/sys/fs/cgroup
  grep -qw memory "$base/cgroup.subtree_control" || echo +memory >"$base/cgroup.subtree_control" 2>/dev/null
  cg=$base/comex-elastic-$$; limit_file=memory.max
elif [ -n "$own1" ] && [ -d "/sys/fs/cgroup/memory$own1" ]; then
  cg=/sys/fs/cgroup/memory$own1/comex-elastic-$$; limit_file=memory.limit_in_bytes
else
  echo "skip: no memory cgroup controller"; exit 77
fi
mkdir "$cg" 2>/dev/null && echo $((768 << 20)) >"$cg/$limit_file" 2>/dev/null ||
  { rmdir "$cg" 2>/dev/null; echo "skip: cannot create a memory cgroup under $(dirname "$cg")"; exit 77; }
[ -f "$cg/memory.swap.max" ] && echo 0 >"$cg/memory.swap.max"
remove_cg() { for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done; sleep 0.3; rmdir "$cg" 2>/dev/null; }
trap 'remove_cg; cleanup' EXIT

# pool_mib PORT: the memnode's pool in service, from comex status --json
pool_mib() {
  "$bin" status --json --interval 0 --memnode "127.0.0.1:$1" --token-file "$dir/token" 2>/dev/null |
    python3 -c 'import json,sys; print(int(json.load(sys.stdin)["memnodes"][0]["pool_bytes"]) >> 20)'
}
# until_pool PORT OP MIB: waits until pool_mib PORT OP MIB holds; gives up
# after 120 s (the memnode looks every 100 ms: it takes well under a second)
until_pool() {
  for _ in $(seq 1 600); do
    p=$(pool_mib "$1"); [ -n "$p" ] && [ "$p" "$2" "$3" ] && return 0
    sleep 0.2
  done
  return 1
}

# the memnode, inside the cgroup (mn_start's command, joined to it first)
sh -c 'echo $$ >"$0/cgroup.procs" && shift && exec "$@"' "$cg" x "$bin" memnode --listen 127.0.0.1:0 --pool 256M \
  --host-reserve 160M --hugepages false --token-file "$dir/token" 2>"$dir/mn.log" &
mn=$!; pids+=("$mn")
for _ in $(seq 1 300); do
  port=$(sed -n 's/.* on port \([0-9][0-9]*\).*/\1/p' "$dir/mn.log" | head -n 1); [ -n "$port" ] && break
  kill -0 "$mn" 2>/dev/null || break; sleep 0.1
done
[ -n "${port:-}" ] || { fail start "memnode did not start: $(tail -n 3 "$dir/mn.log")"; finish; }

start_prog elastic 24M "127.0.0.1:$port" 96 idle || finish
p0=$(pool_mib "$port")
[ "$p0" = 256 ] || fail elastic "pool before the hog: ${p0:-?} MiB, want 256 (host-reserve acted without pressure?)"

# the hog: 360 MiB written, in the memnode's cgroup, until told to go
python3 -c 'import os, sys, time
open(sys.argv[1] + "/cgroup.procs", "w").write(str(os.getpid()))
b = b"x" * (360 << 20)
open(sys.argv[2], "w").write("ready")
while not os.path.exists(sys.argv[3]):
    time.sleep(0.05)' "$cg" "$dir/hog.ready" "$dir/hog.stop" &
hog=$!; pids+=("$hog")
wait_log "$dir/hog.ready" ready || fail hog "the hog did not start"
if ! until_pool "$port" -lt 256; then
  fail shrink "the pool did not shrink under the hog: $(pool_mib "$port") MiB; $(tail -n 3 "$dir/mn.log")"
else
  p1=$(pool_mib "$port")
  grep -q "gave .* MiB of the pool back" "$dir/mn.log" || fail shrink "no 'gave back' line in the memnode's log"
  echo "ok: shrink: pool ${p0} -> ${p1} MiB in service under the hog"
fi
touch "$dir/hog.stop"; wait "$hog" 2>/dev/null
if ! until_pool "$port" -eq 256; then
  fail grow "the pool did not grow back after the hog: $(pool_mib "$port") MiB; $(tail -n 3 "$dir/mn.log")"
else
  echo "ok: grow: pool back to 256 MiB once the hog was gone"
fi
if finished elastic; then echo "ok: elastic: the program's output equals the native run"; fi
kill -TERM "$mn" 2>/dev/null; wait "$mn" 2>/dev/null
finish
