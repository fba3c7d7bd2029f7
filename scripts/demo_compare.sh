#!/usr/bin/env bash
# The end of `make demo`: two real programs (4 threads verifying each other's
# writes, tests/progs/prog_mt, ~100 MiB; Python building and hashing a dict
# of records, tests/progs/pybuild.py, ~100 MiB) with 25 % of the footprint as
# the cgroup memory limit, under Linux swap on disk, swap on zram and comex
# (two memnodes on loopback), against an unlimited local run; every output is
# checked. Needs root (cgroups, swap); about two minutes (a run slower than 45 s is
# stopped and shown as a timeout; Python at 25 % usually is under comex).
set -uo pipefail
build=$(realpath "${1:-build}")
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "== comparison with swap skipped: it needs root (cgroups, swap, zram)"; exit 0
fi
echo "== the same programs at 25 % local memory: local vs swap-disk vs zram vs comex with its embedded memnode (one cgroup limit for all)"
/usr/bin/python3 -m bench.harness demo --build "$build" --no-save --runs 1 --workloads mt,python \
  --sizes mt=96,python=96 --modes swap-disk,zram,comex-shm --spin on --timeout-factor 25 --min-timeout 45 2>"/tmp/comex-demo-compare.$$.log"
rc=$?
if [ $rc -ne 0 ]; then tail -n 15 "/tmp/comex-demo-compare.$$.log"; fi
rm -f "/tmp/comex-demo-compare.$$.log"
echo "   (slower than local by the factor shown; docs/RESULTS.md has the full evaluation)"
exit $rc
