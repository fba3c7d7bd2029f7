# Sourced after lib.sh by the tests that run something in a memory cgroup of
# their own (e2e_memnode_elastic.sh, e2e_run_cgroup.sh): memcg_make creates
# it (or skips the test), in_memcg runs a command inside it, and a hog in it
# takes memory beside what the test runs there.

# memcg_make TAG BYTES: a memory cgroup limited to BYTES, swap off, removed
# (its processes killed) at exit; sets cg and limit_file. v2 under our group
# when it delegates memory, else under the root; v1 under our memory group.
# Sets memcg_enter (see in_memcg).
memcg_make() {
  local own2 own1 base
  [ "$(id -u)" -eq 0 ] || { echo "skip: creating a memory cgroup needs root"; exit 77; }
  own2=$(sed -n 's/^0:://p' /proc/self/cgroup); own1=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
  if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
    base=/sys/fs/cgroup$own2
    grep -qw memory "$base/cgroup.subtree_control" 2>/dev/null || base=/sys/fs/cgroup
    grep -qw memory "$base/cgroup.subtree_control" || echo +memory >"$base/cgroup.subtree_control" 2>/dev/null
    cg=$base/comex-$1-$$; limit_file=memory.max
  elif [ -n "$own1" ] && [ -d "/sys/fs/cgroup/memory$own1" ]; then
    cg=/sys/fs/cgroup/memory${own1%/}/comex-$1-$$; limit_file=memory.limit_in_bytes
  else
    echo "skip: no memory cgroup controller"; exit 77
  fi
  mkdir "$cg" 2>/dev/null && echo "$2" >"$cg/$limit_file" 2>/dev/null ||
    { rmdir "$cg" 2>/dev/null; echo "skip: cannot create a memory cgroup under $(dirname "$cg")"; exit 77; }
  [ -f "$cg/memory.swap.max" ] && echo 0 >"$cg/memory.swap.max"
  [ -f "$cg/memory.swappiness" ] && echo 0 >"$cg/memory.swappiness"
  memcg_enter=(sh -c 'echo $$ >"$0/cgroup.procs" && shift && exec "$@"' "$cg" x)
  trap 'memcg_remove; cleanup' EXIT
}
memcg_remove() {
  local p
  for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  sleep 0.3; rmdir "$cg" 2>/dev/null
}

# in_memcg CMD...: CMD inside the cgroup; "${memcg_enter[@]}" CMD... is the
# same as a command line (a shell that joins the cgroup, then execs CMD)
in_memcg() { "${memcg_enter[@]}" "$@"; }

# memcg_ooms: OOM kills in the cgroup so far
memcg_ooms() {
  cat "$cg/memory.oom_control" "$cg/memory.events" 2>/dev/null | awk '$1 == "oom_kill" {n += $2} END {print n + 0}'
}

# hog_start MiB [polite]: a process in the cgroup that writes MiB and holds it
# until hog_stop. polite: it takes 1 MiB at a time, each only once the cgroup
# has room for it and 4 MiB more (page cache neither mapped nor dirty counts
# as room, as comex counts it), so it gets its MiB only if the others give
# memory back; it gives up (hog.stuck) after the hang guard.
hog_start() {
  rm -f "$dir/hog.ready" "$dir/hog.stop" "$dir/hog.stuck"
  "${die_with_test[@]}" python3 -c 'import os, sys, time
cg, ready, stop, mib, polite, guard = sys.argv[1:7]
open(cg + "/cgroup.procs", "w").write(str(os.getpid()))
v2 = os.path.exists(cg + "/memory.current")
def num(name):
    t = open(cg + "/" + name).read().strip()
    return 1 << 62 if t == "max" else int(t)
def room():
    st = dict(l.split() for l in open(cg + "/memory.stat"))
    k = (lambda n: int(st.get(n, 0))) if v2 else (lambda n: int(st.get("total_" + n, 0)))
    fmap = "file_mapped" if v2 else "mapped_file"
    cache = k("active_file") + k("inactive_file") - k(fmap) - k("file_dirty" if v2 else "dirty") - \
        k("file_writeback" if v2 else "writeback")
    return num("memory.max" if v2 else "memory.limit_in_bytes") - \
        num("memory.current" if v2 else "memory.usage_in_bytes") + max(cache, 0)
held, end = [], time.time() + float(guard)
while len(held) < int(mib):
    if polite == "polite" and room() < (5 << 20):
        if time.time() > end:
            open(ready.replace("ready", "stuck"), "w").write("%d MiB of %s" % (len(held), mib))
            break
        time.sleep(0.01)
        continue
    held.append(b"x" * ((1 if polite == "polite" else int(mib)) << 20))
    if polite != "polite":
        break
open(ready, "w").write("ready")
while not os.path.exists(stop):
    time.sleep(0.05)' "$cg" "$dir/hog.ready" "$dir/hog.stop" "$1" "${2:-}" "$hang_guard" &
  hog=$!; pids+=("$hog")
  until [ -e "$dir/hog.ready" ] || [ -e "$dir/hog.stuck" ] || ! kill -0 "$hog" 2>/dev/null; do sleep 0.1; done
  [ -e "$dir/hog.ready" ] || { fail hog "the hog did not get its memory: $(cat "$dir/hog.stuck" 2>/dev/null)"; return 1; }
}
hog_stop() { touch "$dir/hog.stop"; wait "$hog" 2>/dev/null; }
