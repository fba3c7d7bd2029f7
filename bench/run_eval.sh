#!/usr/bin/env bash
# The evaluation of docs/RESULTS.md, scaled to ~50 minutes on a 2-core VM:
# each experiment of bench/harness with the workloads, sizes and repetitions
# chosen in docs/BENCH.md, then the plots and docs/RESULTS.md.
#   bash bench/run_eval.sh [BUILD_DIR]        (as root; `make bench-eval`)
# EVAL_ONLY="sensitivity multitask" runs only the named experiments.
set -euo pipefail
build=$(realpath "${1:-build}")
cd "$(dirname "$0")/.."
h="python3 -m bench.harness"
common=(--build "$build" --no-report --timeout-factor 25 --min-timeout 30)
all8=python,redis,numpy,sqlite,sort,mt,seq,rand
want() { [ -z "${EVAL_ONLY:-}" ] || [[ " $EVAL_ONLY " == *" $1 "* ]]; }
want sweep       && $h sweep       "${common[@]}" --workloads python,redis,rand --sizes python=64,redis=48,rand=64 --runs 3
want faults      && $h faults      "${common[@]}" --workloads $all8 --size 64 --fault-fractions 50,25 --runs 1
want tax         && $h tax         "${common[@]}" --workloads $all8 --size 64 --runs 3
want sensitivity && $h sensitivity "${common[@]}" --sens-workloads rand --size 96 --sens-fraction 50 --runs 3
want multitask   && $h multitask   "${common[@]}" --mt-workloads rand --size 96 --mt-fraction 50 --runs 3 \
                                   --mt-modes local,swap-disk,zram,comex,comex-net10
$h report
