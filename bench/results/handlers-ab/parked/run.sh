#!/bin/bash
# A/B: old (f1338c1, a parked pinned handler reads the uffd when its poll wakes or every 100 ms) vs new (it reads nothing until the listener lets it poll); plus `one` on mt
cd /work/main
O=/tmp/s54/pk
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="old new one"; else order="one new old"; fi
  for cfg in $order; do
    [ $cfg = old ] && B=/tmp/oldA/build || B=build
    before=$(ls bench/results/ | sort)
    if [ $cfg = one ]; then
      COMEX_FAULT_HANDLERS=one python3 -m bench.harness sweep --build $B --workloads mt --modes comex --fractions 25 --runs 1 \
        --sizes mt=512 --no-report > $O/log-q-$cfg-$r 2>&1
    else
      python3 -m bench.harness sweep --build $B --workloads seq,rand,mt,python --modes comex,comex-shm --fractions 25 --runs 1 \
        --sizes python=256,seq=512,rand=512,mt=512 --no-report > $O/log-q-$cfg-$r 2>&1
      if [ $r -le 2 ]; then
        python3 -m bench.harness busy --build $B --workloads rand,mt,python --busy-modes comex --neighbours stress-1 --runs 1 \
          --sizes python=256,rand=512,mt=512 --no-report > $O/log-b-$cfg-$r 2>&1
      fi
    fi
    after=$(ls bench/results/ | sort)
    new=$(comm -13 <(echo "$before") <(echo "$after"))
    for f in $new; do mv bench/results/$f $O/$cfg-$r-$f; done
    echo "round $r $cfg done $(date +%T) $new"
  done
done
echo DONE
