#!/usr/bin/env bash
# The evaluation of docs/RESULTS.md, scaled to ~50 minutes on a 2-core VM:
# each experiment of bench/harness with the workloads, sizes and repetitions
# chosen in docs/BENCH.md, then the plots and docs/RESULTS.md.
#   bash bench/run_eval.sh [BUILD_DIR]        (as root; `make bench-eval`)
set -euo pipefail
build=$(realpath "${1:-build}")
cd "$(dirname "$0")/.."
h="python3 -m bench.harness"
common=(--build "$build" --no-report --timeout-factor 25 --min-timeout 30)
all8=python,redis,numpy,sqlite,sort,mt,seq,rand
$h sweep       "${common[@]}" --workloads python,redis,rand --sweep-sizes python=64,redis=48,rand=64 --runs 3
$h faults      "${common[@]}" --workloads $all8 --size 64 --fault-fractions 50,25 --runs 1
$h sensitivity "${common[@]}" --sens-workloads rand --size 48 --runs 3
$h multitask   "${common[@]}" --mt-workloads rand --size 48 --runs 3 --mt-modes local,swap-disk,zram,comex,comex-net10
$h tax         "${common[@]}" --workloads $all8 --size 64 --runs 3
$h report
