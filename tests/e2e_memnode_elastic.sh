#!/usr/bin/env bash
# e2e_memnode_elastic: a memnode with --host-reserve in a memory cgroup gives pool memory back when a memory hog in its cgroup leaves the host less than the reserve (free blocks first, then blocks whose pages the client moves to another memnode on SHRINK) and takes it back when the hog is gone; with replicas 2 the copies on the blocks given back move to a third memnode first, so a later memnode death loses nothing; the program ends with the native output.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
. "$src/tests/progs/memnodes.sh"
echo "e2e_memnode_elastic: memnode (256 MiB pool, host-reserve 160 MiB) in a 768 MiB cgroup, a 360 MiB hog beside it, prog_gate 96 MiB at 24M local; then a 128 MiB memnode full of a 112 MiB program's pages, a 560 MiB hog: pages moved to a second memnode; the same with replicas 2, then the other copy's memnode killed"

. "$src/tests/progs/memcg.sh"
memcg_make elastic $((768 << 20))

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

# cg_memnode NAME POOL: a memnode with --host-reserve 160M inside the cgroup
# (joined before exec); sets port_NAME and pid_NAME, logs to $dir/NAME.log
cg_memnode() {
  local name=$1 pool=$2 port=
  in_memcg "${die_with_test[@]}" "$bin" memnode --listen 127.0.0.1:0 \
    --pool "$pool" --host-reserve 160M --hugepages false --token-file "$dir/token" 2>"$dir/$name.log" &
  local pid=$!; pids+=("$pid")
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.* on port \([0-9][0-9]*\).*/\1/p' "$dir/$name.log" | head -n 1); [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || break; sleep 0.1
  done
  [ -n "$port" ] || { fail "$name" "memnode did not start: $(tail -n 3 "$dir/$name.log")"; return 1; }
  printf -v "port_$name" %s "$port"; printf -v "pid_$name" %s "$pid"
}

# 1. Free memory only: 256 MiB pool, a 96 MiB program, a 360 MiB hog.
cg_memnode mn 256M || finish
port=$port_mn; mn=$pid_mn
start_prog elastic 24M "127.0.0.1:$port" 96 idle || finish
p0=$(pool_mib "$port")
[ "$p0" = 256 ] || fail elastic "pool before the hog: ${p0:-?} MiB, want 256 (host-reserve acted without pressure?)"

hog_start 360
if ! until_pool "$port" -lt 256; then
  fail shrink "the pool did not shrink under the hog: $(pool_mib "$port") MiB; $(tail -n 3 "$dir/mn.log")"
else
  p1=$(pool_mib "$port")
  grep -q "gave .* MiB of the pool back" "$dir/mn.log" || fail shrink "no 'gave back' line in the memnode's log"
  echo "ok: shrink: pool ${p0} -> ${p1} MiB in service under the hog"
fi
hog_stop
if ! until_pool "$port" -eq 256; then
  fail grow "the pool did not grow back after the hog: $(pool_mib "$port") MiB; $(tail -n 3 "$dir/mn.log")"
else
  echo "ok: grow: pool back to 256 MiB once the hog was gone"
fi
if finished elastic; then echo "ok: elastic: the program's output equals the native run"; fi
kill -TERM "$mn" 2>/dev/null; wait "$mn" 2>/dev/null

# shrink_case CASE A NEW CONF0 CONF1 ON_SHRUNK: prog CASE (112 MiB, 16M
# local) starts with config CONF0 (memnode lines over memnode A, in the
# cgroup), gets CONF1 (NEW added) once running; a 560 MiB hog leaves the
# host ~80 MiB short of the reserve, more than A's free blocks: A sends
# SHRINK, the client moves its pages off the chosen frames, A's pool falls to
# <= 64 MiB, then ON_SHRUNK runs with the hog still there. False when the
# program did not start (no finished to call).
shrink_case() {
  local c=$1 a=$2 new=$3 pa pn
  pa=port_$a; pn=port_$new
  printf '%s\n' "$4" >"$dir/$c.conf"
  start_prog "$c" 16M "--config $dir/$c.conf" 112 idle || return 1
  printf '%s\n' "$5" >"$dir/$c.conf.new"
  mv "$dir/$c.conf.new" "$dir/$c.conf"
  a0=$(pool_mib "${!pa}")
  if ! wait_log "$dir/$c.err" "127.0.0.1:${!pn} (nid [0-9]*) connected"; then
    fail "$c" "memnode $new, added to the config file, was not connected to"
    return 0
  fi
  hog_start 560
  if ! wait_log "$dir/$a.log" "asking the clients holding frames"; then
    fail "$c" "memnode $a sent no SHRINK: $(tail -n 3 "$dir/$a.log")"
  elif ! wait_log "$dir/$c.err" "pages moved off frames"; then
    fail "$c" "the client did not move its pages off: $(grep -E '^comex: (error|warning)' "$dir/$c.err" | head -n 3)"
  elif ! until_pool "${!pa}" -le 64; then
    fail "$c" "memnode $a did not give back blocks that held pages: pool $(pool_mib "${!pa}") MiB; $(tail -n 3 "$dir/$a.log")"
  else
    "$6"
  fi
  hog_stop
}

# 2. Pages moved off: memnode a (128 MiB pool, in the cgroup) holds the
# program's pages with little free room; memnode b (outside) is added.
shrunk() {
  echo "ok: shrink: memnode a ${a0} -> $(pool_mib "$port_a") MiB in service; client: $(grep -m1 -o '[0-9]* pages moved off frames [0-9-]*' "$dir/shrink.err")"
}
if want shrink; then
  cg_memnode a 128M && mn_start b --pool 256M &&
    shrink_case shrink a b "memnode = 127.0.0.1:$port_a" "memnode = 127.0.0.1:$port_a, 127.0.0.1:$port_b" shrunk && {
      until_pool "$port_a" -eq 128 || fail shrink "memnode a did not grow back after the hog: $(pool_mib "$port_a") MiB"
      if finished shrink; then
        n=$(stats_get shrink pages_migrated)
        [ "$n" -gt 0 ] && echo "ok: shrink: output identical; pages_migrated=$n, pages_migrated_home=$(stats_get shrink pages_migrated_home)" ||
          fail shrink "pages_migrated=$n: nothing moved"
      fi
    }
  for v in pid_a pid_b; do [ -n "${!v:-}" ] && { kill -KILL "${!v}"; wait "${!v}"; } 2>/dev/null; done
fi

# 3. The same with replicas 2: ra and rb hold a copy of every page, rc is
# added. ra's SHRINK moves the copies in the chosen range to rc before their
# frames go back, so no page has a single copy at any time. Once every
# SHRINK is answered, rb is SIGKILLed: every page still has a copy on ra or
# rc, so nothing is lost.
shrunk_replicas() {
  local shrinks copies
  # every SHRINK ra sent is answered: its range's copies moved first
  shrinks=$(grep -c "asking the clients holding frames" "$dir/ra.log")
  wait_log "$dir/shrink_replicas.err" "pages moved off frames" "$shrinks"
  copies=$(sed -n 's/.*, \([0-9]*\) copies of replicated pages moved.*/\1/p' "$dir/shrink_replicas.err" |
           awk '{ s += $1 } END { print s + 0 }')
  if [ "$copies" -le 0 ]; then
    fail shrink_replicas "no copy was moved off memnode ra: $(grep 'moved off frames' "$dir/shrink_replicas.err" | tail -n 2)"
    return
  fi
  kill -KILL "$pid_rb"; wait "$pid_rb" 2>/dev/null
  echo "ok: shrink_replicas: memnode ra ${a0} -> $(pool_mib "$port_ra") MiB in service, $copies copies moved before their frames went back, then memnode rb killed"
}
if want shrink_replicas; then
  cg_memnode ra 128M && mn_start rb --pool 256M && mn_start rc --pool 256M &&
    shrink_case shrink_replicas ra rc "replicas = 2
memnode = 127.0.0.1:$port_ra, 127.0.0.1:$port_rb" "replicas = 2
memnode = 127.0.0.1:$port_ra, 127.0.0.1:$port_rb, 127.0.0.1:$port_rc" shrunk_replicas &&
    finished shrink_replicas && {
      rr=$(stats_get shrink_replicas pages_rereplicated); lost=$(stats_get shrink_replicas pages_lost)
      if [ "$lost" -ne 0 ]; then
        fail shrink_replicas "pages_lost=$lost after memnode rb's death"
      else
        echo "ok: shrink_replicas: output identical after the shrink and rb's death; pages_rereplicated=$rr, pages_lost=0"
      fi
    }
fi
finish
