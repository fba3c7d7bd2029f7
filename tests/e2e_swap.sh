#!/usr/bin/env bash
# e2e_swap: comex swap up on a real memnode (128 MiB device: FUSE file, loop device with direct I/O, mkswap, swapon); a static C program and a Python program, each in a memory cgroup at about 25 % of its footprint with swap allowed, print what they print without a limit while their pages went to the device (its counters); the refusals (no --single-copy, a bad size, more replicas than memnodes, an unknown device) name what is wrong; comex swap down swaps off, detaches, and the daemon gives every frame back.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
. "$src/tests/progs/memnodes.sh"
. "$src/tests/progs/memcg.sh"
. "$src/tests/progs/swapdev.sh"
echo "e2e_swap: comex swap up (128 MiB) on a memnode; prog_gate_static 96 MiB and a 96 MiB Python program in a memory cgroup at 24-32 MiB; down"
static=$progs/prog_gate_static
[ -x "$static" ] || { echo "FAIL: $static is not built"; exit 1; }
swap_memcg swap

# 1. refusals, each naming what is wrong; nothing left behind
rc=0; "$bin" swap up --size 64M --memnode 127.0.0.1:1 --swap-dir "$swapdir" 2>"$dir/nocopy.err" || rc=$?
grep -q -- "--single-copy" "$dir/nocopy.err" && [ $rc -eq 2 ] || fail nocopy "exit $rc: $(tail -n 1 "$dir/nocopy.err")"
rc=0; "$bin" swap up --size 12345 --single-copy --swap-dir "$swapdir" 2>"$dir/badsize.err" || rc=$?
grep -q "option size" "$dir/badsize.err" && [ $rc -eq 2 ] || fail badsize "exit $rc: $(tail -n 1 "$dir/badsize.err")"
rc=0; "$bin" swap up --size 64M --replicas 2 --memnode 127.0.0.1:1 --swap-dir "$swapdir" 2>"$dir/onenode.err" || rc=$?
grep -q "option replicas" "$dir/onenode.err" && [ $rc -eq 2 ] || fail onenode "exit $rc: $(tail -n 1 "$dir/onenode.err")"
rc=0; "$bin" swap up --size 64M --replicas 2 --swap-dir "$swapdir" 2>"$dir/embrep.err" || rc=$?
grep -q "option replicas.*embedded" "$dir/embrep.err" && [ $rc -eq 2 ] || fail embrep "exit $rc: $(tail -n 1 "$dir/embrep.err")"
ls "$swapdir"/* >/dev/null 2>&1 && fail refusals "a refused up left files: $(ls "$swapdir")"
rc=0; "$bin" swap down --swap-dir "$swapdir" /dev/loop999 2>"$dir/nodev.err" || rc=$?
grep -q "no comex swap device" "$dir/nodev.err" && [ $rc -eq 1 ] || fail nodev "exit $rc: $(tail -n 1 "$dir/nodev.err")"

# 2. up on a memnode
mn_start a --pool 192M || finish
swap_up --size 128M --single-copy --memnode "127.0.0.1:$port_a" --token-file "$dir/token" || finish

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
if swap_down; then
  if ! grep -q "disconnected, [0-9]* frames returned" "$dir/a.log"; then
    fail down "the memnode saw no clean disconnect: $(tail -n 2 "$dir/a.log")"
  else
    echo "ok: down: $(grep -o 'disconnected, [0-9]* frames returned' "$dir/a.log" | tail -n 1)"
  fi
fi
finish
