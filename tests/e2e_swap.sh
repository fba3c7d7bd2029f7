#!/usr/bin/env bash
# e2e_swap: comex swap up on a real memnode (128 MiB device: FUSE file, loop device with direct I/O, mkswap, swapon); a static C program and a Python program, each in a memory cgroup at about 25 % of its footprint with swap allowed, print what they print without a limit while their pages went to the device (its counters); the refusals (no --single-copy, a bad size, an unknown device) name what is wrong; comex swap down swaps off, detaches, and the daemon gives every frame back.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
. "$src/tests/progs/memnodes.sh"
. "$src/tests/progs/memcg.sh"
echo "e2e_swap: comex swap up (128 MiB) on a memnode; prog_gate_static 96 MiB and a 96 MiB Python program in a memory cgroup at 24-32 MiB; down"
[ "$(id -u)" -eq 0 ] || { echo "skip: comex swap needs root"; exit 77; }
[ -w /dev/fuse ] || { echo "skip: no /dev/fuse"; exit 77; }
for c in losetup mkswap swapon swapoff; do
  command -v "$c" >/dev/null || { echo "skip: $c is not installed"; exit 77; }
done
static=$progs/prog_gate_static
[ -x "$static" ] || { echo "FAIL: $static is not built"; exit 1; }
swapdir=$dir/swap
token_make() { "$bin" token "$dir/token" >/dev/null; }
token_make
memcg_make swap 64M
# memcg_make turns swap off for its cgroup: this test wants it on
[ -f "$cg/memory.swappiness" ] && echo 60 >"$cg/memory.swappiness"
[ -f "$cg/memory.swap.max" ] && echo max >"$cg/memory.swap.max"
device=
swap_cleanup() { # whatever a failed run left attached
  [ -n "$device" ] && { swapoff "$device" 2>/dev/null; losetup -d "$device" 2>/dev/null; }
  for f in "$swapdir"/*.dev; do [ -e "$f" ] && umount -l "$f" 2>/dev/null; done
  for f in "$swapdir"/*.pid; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
}
trap 'swap_cleanup; memcg_remove; cleanup' EXIT

# counter KEY: the device's counter from comex swap status --json
counter() {
  "$bin" swap status --swap-dir "$swapdir" --json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[0][sys.argv[1]] if d else -1)' "$1"
}

# 1. refusals, each naming what is wrong; nothing left behind
rc=0; "$bin" swap up --size 64M --memnode 127.0.0.1:1 --swap-dir "$swapdir" 2>"$dir/nocopy.err" || rc=$?
grep -q -- "--single-copy" "$dir/nocopy.err" && [ $rc -eq 2 ] || fail nocopy "exit $rc: $(tail -n 1 "$dir/nocopy.err")"
rc=0; "$bin" swap up --size 12345 --single-copy --swap-dir "$swapdir" 2>"$dir/badsize.err" || rc=$?
grep -q "option size" "$dir/badsize.err" && [ $rc -eq 2 ] || fail badsize "exit $rc: $(tail -n 1 "$dir/badsize.err")"
rc=0; "$bin" swap down --swap-dir "$swapdir" /dev/loop999 2>"$dir/nodev.err" || rc=$?
grep -q "no comex swap device" "$dir/nodev.err" && [ $rc -eq 1 ] || fail nodev "exit $rc: $(tail -n 1 "$dir/nodev.err")"

# 2. up on a memnode
mn_start a --pool 192M || finish
"$bin" swap up --size 128M --single-copy --memnode "127.0.0.1:$port_a" --token-file "$dir/token" \
  --swap-dir "$swapdir" >"$dir/up.out" 2>"$dir/up.err" || { fail up "$(tail -n 5 "$dir/up.err")"; finish; }
device=$(tail -n 1 "$dir/up.out")
if ! swapon --show=NAME --noheadings | grep -qx "$device"; then
  fail up "the device '$device' printed by up is not an active swap device"; finish
fi
echo "ok: up: $device, $(swapon --show=NAME,SIZE,PRIO --noheadings | grep "^$device")"

# 3. programs comex run refuses (a static binary) or need not be started
# under it (Python), in the cgroup with the device as their swap
cat >"$dir/prog.py" <<'PY'
import hashlib, random
r = random.Random(5)
blocks = [r.randbytes(1 << 20) for _ in range(96)]   # 96 MiB that does not compress
h = hashlib.sha256()
for _ in range(2):
    for b in blocks:
        h.update(b)
print(h.hexdigest())
PY
swapped() { # NAME LIMIT CMD...: native, then in the cgroup; outputs equal, pages went to the device
  local name=$1 limit=$2 before after; shift 2
  native "$name" "$@" || { fail "$name" "native run failed"; return; }
  echo "$limit" >"$cg/$limit_file"
  before=$(counter bytes_written)
  in_memcg "$@" >"$dir/$name.swap" 2>"$dir/$name.swap-err" || { fail "$name" "exit $? in the cgroup: $(tail -n 2 "$dir/$name.swap-err")"; return; }
  after=$(counter bytes_written)
  if ! cmp -s "$dir/$name.native" "$dir/$name.swap"; then
    fail "$name" "output differs from the run without a limit"
  elif [ "$after" -le "$before" ]; then
    fail "$name" "nothing was written to $device ($before -> $after bytes)"
  else
    echo "ok: $name: same output at $limit, $(( (after - before) >> 20 )) MiB written to $device"
  fi
}
swapped static 24M "$static" 96 /
swapped python 32M python3 "$dir/prog.py"
[ "$(counter errors)" -eq 0 ] || fail errors "the device counted $(counter errors) failed requests"
# the request latencies status reports, from the daemon's histograms
lat="$(counter read_p50_us) $(counter read_p99_us) $(counter write_p50_us) $(counter write_p99_us)"
if python3 -c 'import sys; v=[float(x) for x in sys.argv[1:]]; sys.exit(0 if all(x > 0 for x in v) and v[0] <= v[1] and v[2] <= v[3] else 1)' $lat; then
  echo "ok: status: read p50/p99 and write p50/p99 $lat us"
else
  fail status "latencies (read p50 p99, write p50 p99) not all positive and ordered: $lat"
fi

# 4. down: swapped off, detached, the daemon gone, every frame back
"$bin" swap down --swap-dir "$swapdir" "$device" 2>"$dir/down.err" || fail down "$(tail -n 3 "$dir/down.err")"
if swapon --show=NAME --noheadings | grep -qx "$device" || losetup "$device" >/dev/null 2>&1; then
  fail down "$device is still attached"
elif ls "$swapdir"/*.pid >/dev/null 2>&1; then
  fail down "a daemon's pid file is left: $(ls "$swapdir")"
elif ! grep -q "disconnected, [0-9]* frames returned" "$dir/a.log"; then
  fail down "the memnode saw no clean disconnect: $(tail -n 2 "$dir/a.log")"
else
  device=
  echo "ok: down: $(grep -o 'disconnected, [0-9]* frames returned' "$dir/a.log" | tail -n 1)"
fi
finish
