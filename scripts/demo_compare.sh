#!/usr/bin/env bash
# The end of `make demo`: one real program (Python building and hashing a dict
# of records, tests/progs/pybuild.py, ~100 MiB) with 25 % of its footprint as
# the cgroup memory limit, under Linux swap on disk, swap on zram and comex
# (two memnodes on loopback), against an unlimited local run; every output is
# checked. Needs root (cgroups, swap); about a minute.
set -uo pipefail
build=$(realpath "${1:-build}")
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "== comparison with swap skipped: it needs root (cgroups, swap, zram)"; exit 0
fi
echo "== the same program at 25 % local memory: local vs swap-disk vs zram vs comex (cgroup limit for all)"
/usr/bin/python3 -m bench.harness demo --build "$build" --no-save --runs 1 --workloads python \
  --sizes python=96 --modes swap-disk,zram,comex --timeout-factor 30 --min-timeout 60 2>"/tmp/comex-demo-compare.$$.log"
rc=$?
if [ $rc -ne 0 ]; then tail -n 15 "/tmp/comex-demo-compare.$$.log"; fi
rm -f "/tmp/comex-demo-compare.$$.log"
echo "   (slower than local by the factor shown; docs/RESULTS.md has the full evaluation)"
exit $rc
