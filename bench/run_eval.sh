#!/usr/bin/env bash
# The evaluation of docs/RESULTS.md at footprints of 512 MiB, scaled to ~45
# minutes on a 2-core VM (docs/BENCH.md, "The plan"): the fraction sweep at
# 50 % and 25 % and the busy-machine experiment, then the plots and
# docs/RESULTS.md with its targets.
#   bash bench/run_eval.sh [BUILD_DIR]        (as root; `make bench-eval`)
# EVAL_ONLY="sweep busy" runs only the named experiments; the others
# (faults tax sensitivity multitask) are not in the default plan and run when
# named there. EVAL_SWEEP_MODES, EVAL_SWEEP_WORKLOADS, EVAL_RUNS and
# EVAL_BUSY_WORKLOADS override the sweep's modes, workloads and repetitions and
# the busy experiment's workloads.
set -euo pipefail
build=$(realpath "${1:-build}")
cd "$(dirname "$0")/.."
h="python3 -m bench.harness"
# comex with its own defaults (busy-polling as `comex run` does it: the harness's default, --spin on);
# EVAL_SPIN=off measures it without any busy-polling
common=(--build "$build" --no-report --timeout-factor 25 --min-timeout 30 ${EVAL_SPIN:+--spin "$EVAL_SPIN"})
size=512
sweep_wl=${EVAL_SWEEP_WORKLOADS:-seq,rand,mt,sort}
runs=${EVAL_RUNS:-3}
want() { if [ -z "${EVAL_ONLY:-}" ]; then [[ " sweep busy " == *" $1 "* ]]; else [[ " $EVAL_ONLY " == *" $1 "* ]]; fi; }
want sweep       && $h sweep       "${common[@]}" --workloads "$sweep_wl" --size $size --fractions 50,25 --runs "$runs" \
                                   --modes "${EVAL_SWEEP_MODES:-swap-disk,zram,comex-shm}"
want busy        && $h busy        "${common[@]}" --workloads "${EVAL_BUSY_WORKLOADS:-seq,mt}" --size $size --busy-fraction 25 --runs 2 \
                                   --busy-modes local,comex-shm,swap-disk,zram --neighbours none,stress,stress-nice
want faults      && $h faults      "${common[@]}" --workloads "$sweep_wl" --size $size --fault-fractions 50,25 --runs 1
want tax         && $h tax         "${common[@]}" --workloads "$sweep_wl" --size $size --runs 3
want sensitivity && $h sensitivity "${common[@]}" --sens-workloads rand --size $size --sens-fraction 50 --runs 1
want multitask   && $h multitask   "${common[@]}" --mt-workloads rand --size 256 --mt-fraction 50 --runs 1 \
                                   --mt-modes local,swap-disk,zram,comex,comex-shm
$h report
