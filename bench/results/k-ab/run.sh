#!/bin/bash
# A/B by hand of the memnode's back-off on long yields (longyield.patch, build /tmp/ly) against HEAD's memnode
# and HEAD's memnode at idle-spin 0: pager_bench rand 252 MiB at 64M local, alone (k=1) and two at once (k=2),
# two TCP memnodes (1472M pools) on loopback; the programs always run HEAD's comex run.
cd /tmp/s54/k
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="new old is0"; else order="is0 old new"; fi
  for cfg in $order; do
    B=/work/main/build/comex; E=
    [ $cfg = new ] && B=/tmp/ly/build/comex
    [ $cfg = is0 ] && E=COMEX_IDLE_SPIN=0
    pkill -f "comex memnode --listen 127.0.0.1:740"; sleep 1
    for p in 7401 7402; do (env $E $B memnode --listen 127.0.0.1:$p --pool 1472M --token-file /tmp/s52/tok2 > /tmp/s52/mn$p.log 2>&1 &); done
    sleep 8
    ./k.sh 1 $cfg-$r-solo 2>/dev/null
    ./k.sh 2 $cfg-$r-k2 2>/dev/null
  done
done
pkill -f "comex memnode --listen 127.0.0.1:740"
echo DONE
