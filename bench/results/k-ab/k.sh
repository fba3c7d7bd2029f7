#!/bin/bash
# k.sh K TAG: K concurrent pager_bench rand 252 MiB at 64M local over the two memnodes 7401/7402;
# prints wall, each program's user/sys CPU, ctx switches, and the memnodes' CPU during the run
K=$1; TAG=$2; shift 2
C=/work/main/build/comex
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
m1=$(pgrep -f "listen 127.0.0.1:7401"); m2=$(pgrep -f "listen 127.0.0.1:7402")
a1=$(cpu $m1); a2=$(cpu $m2); s=$(date +%s.%N)
for i in $(seq 1 $K); do
  env "$@" /usr/bin/time -o ${OUT:-.}/t-$TAG-$i -f "%e %U %S %w %c" $C run --memnode 127.0.0.1:7401 --memnode 127.0.0.1:7402 \
    --token-file $TOKEN --local-mem 64M --stats-json ${OUT:-.}/st-$TAG-$i.json -- \
    /work/main/build/pager_bench --pattern rand --size-mib 252 --passes 3 --write-pct 20 --seed $i > ${OUT:-.}/out-$TAG-$i 2>&1 &
done
wait
e=$(date +%s.%N); b1=$(cpu $m1); b2=$(cpu $m2)
echo "$TAG k=$K wall $(echo "$e - $s" | bc) memnode-cpu-s $(echo "($b1 - $a1)/100" | bc -l | cut -c1-5) $(echo "($b2 - $a2)/100" | bc -l | cut -c1-5)"
for i in $(seq 1 $K); do
  python3 - ${OUT:-.}/t-$TAG-$i ${OUT:-.}/st-$TAG-$i.json <<'PY'
import json,sys
t=open(sys.argv[1]).read().split()
d=json.load(open(sys.argv[2]))
r=d['remote_reads'] or 1
print(f"  prog wall {t[0]} user {t[1]} sys {t[2]} vol {t[3]} invol {t[4]} faults_remote {d['faults_remote']} read_us {d['ns_read']/r/1000:.1f} fault_us {d['ns_remote']/max(1,d['faults_remote'])/1000:.1f}")
PY
done
