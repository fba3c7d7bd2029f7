#!/usr/bin/env bash
# e2e_bench_smoke: the evaluation harness (bench/harness) runs a C and a Python program once in every mode (swap-disk, zram, comex, comex-shm, comex-net10, comex-net25, comex-swap, comex-swap+zswap) at a tiny size and each output matches the local run; no timing is asserted.
set -u
build=${COMEX_BUILD:?}; src=${COMEX_SRC:?}
if grep -q "COMEX_SANITIZE:BOOL=ON" "$build/CMakeCache.txt" 2>/dev/null; then
  echo "skip: comex run is unavailable in the sanitizer build (LD_PRELOAD of a sanitized runtime is unsupported)"; exit 77
fi
[ "$(id -u)" -eq 0 ] || { echo "skip: the harness needs root (cgroups, swap, zram, network namespaces)"; exit 77; }
grep -qE "cgroup .*memory|cgroup2" /proc/mounts || { echo "skip: no cgroup memory controller"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "skip: no /usr/bin/python3"; exit 77; }
if [ -n "$(tail -n +2 /proc/swaps)" ]; then
  echo "skip: a swap device is active (another harness run?): $(tail -n +2 /proc/swaps | awk '{print $1}' | tr '\n' ' ')"; exit 77
fi
cd "$src"
# prog_mt (48 MiB) and Python (~70 MiB) at 90 % of their local peak RSS, one run per mode
# (lower limits make the kernel OOM-kill the swap modes now and then: docs/BENCH.md).
timeout -k 10 300 /usr/bin/python3 -m bench.harness smoke --build "$build" --no-save --runs 1 \
  --workloads mt,python --sizes mt=48,python=64 --fractions 90 --min-timeout 60
rc=$?
[ $rc -eq 124 ] && echo "FAIL: the smoke run hung (5 min)"
exit $rc
