#!/usr/bin/env bash
# e2e_run_network: memnodes across a real network path (a network namespace behind a veth pair with tbf): a link that drops from 10 to 1 Gbit/s and back mid-run, and the client's connection to one memnode reset mid-transfer (ss -K) under replicas 2, leave the job's output identical and lose no page.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
. "$src/tests/progs/memnodes.sh"
echo "e2e_run_network: a memnode in a network namespace; the link slowed 10x mid-run; a connection reset mid-run under replicas 2"
[ "$(id -u)" -eq 0 ] || { echo "skip: network namespaces need root"; exit 77; }
for t in ip tc ss; do command -v "$t" >/dev/null || { echo "skip: $t (iproute2) is not installed"; exit 77; }; done

# One memnode host: namespace $ns, veth $hv (here, 10.252.S.1) <-> $nv
# (there, 10.252.S.2), tbf on both ends. Addresses of our own namespace only.
sub=$(( $$ % 200 + 20 ))
ns=cxtn$$ hv=cxth$$ nv=cxtv$$ host_ip=10.252.$sub.1 mn_ip=10.252.$sub.2
net_down() { ip link del "$hv" 2>/dev/null; ip netns del "$ns" 2>/dev/null; }
trap 'net_down; cleanup' EXIT
ip netns add "$ns" && ip link add "$hv" type veth peer name "$nv" && ip link set "$nv" netns "$ns" &&
  ip addr add "$host_ip/30" dev "$hv" && ip link set "$hv" up &&
  ip -n "$ns" addr add "$mn_ip/30" dev "$nv" && ip -n "$ns" link set "$nv" up && ip -n "$ns" link set lo up ||
  { echo "skip: cannot make a network namespace with a veth pair here"; exit 77; }
# shape DEV RATE [NS]: tbf at RATE on DEV (a burst of 2 ms at 10 Gbit/s, 10 ms of queue)
shape() {
  local verb=add; [ -n "${4:-}" ] && verb=$4
  ${3:+ip netns exec "$3"} tc qdisc "$verb" dev "$1" root tbf rate "$2" burst 2500000 latency 10ms
}
shape "$hv" 10gbit && shape "$nv" 10gbit "$ns" || { echo "skip: tbf is not available"; exit 77; }

pybuild_job 80000 # job, its native output, lm: 25 % of its native peak
after=${COMEX_TEST_FAIL_AFTER:-10000}
mn_wrap=(ip netns exec "$ns")
mn_start far --listen "$mn_ip:0" --pool 256M
unset mn_wrap
mn_start near --pool 256M

# 1. The link to the far memnode drops to 1 Gbit/s for two seconds while the
# job pages, then comes back: same output, pages read from there.
if want slowlink; then
  start_job slowlink "$mn_ip:$port_far" --replicas 1 && written_at_least slowlink "$after" && {
    shape "$hv" 1gbit "" change && shape "$nv" 1gbit "$ns" change
    sleep 2
    shape "$hv" 10gbit "" change && shape "$nv" 10gbit "$ns" change
    if ended_identical slowlink; then
      reads=$(stats_get slowlink remote_reads)
      [ "$reads" -gt 0 ] && echo "ok: slowlink: link at 1 Gbit/s for 2 s mid-run; $reads remote reads, output identical" ||
        fail slowlink "no remote reads: the test proves nothing"
    fi
  }
fi

# 2. replicas 2 over the far and the near memnode: the client's connections
# to the far one are reset (ss -K) mid-run. Its copies are unreachable from
# then on: reads fail over to the near copies, nothing is lost.
if want reset; then
  start_job reset "$mn_ip:$port_far,127.0.0.1:$port_near" && written_at_least reset "$after" && {
    killed=$(ss -K -t dst "$mn_ip" 2>/dev/null | grep -c ESTAB)
    if [ "$killed" -lt 1 ]; then
      fail reset "ss -K reset no connection to $mn_ip"
    elif ended_identical reset; then
      lost=$(stats_get reset pages_lost)
      grep -q "$mn_ip:$port_far.*failed" "$dir/reset.err" || fail reset "the reset was not seen as a memnode failure: $(head -n 3 "$dir/reset.err")"
      [ "$lost" -eq 0 ] && echo "ok: reset: $killed connection(s) to the far memnode reset mid-run; no page lost, output identical" ||
        fail reset "pages_lost=$lost"
    fi
  }
fi
finish
