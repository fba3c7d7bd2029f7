#!/usr/bin/env python3
"""memnode_busy (docs/DECISIONS.md D36, issue 21 item 2): how a memnode in its
own process serves 4 KiB reads over loopback TCP when the host it runs on is
busy, for each value of its option sched.

The memnode (`comex memnode --sched MODE`, every thread of it pinned to the
last CPU, as a memnode sharing someone's machine) and transport_bench (the
client, pinned to CPU 0, timing --iters reads and then writes of 4 KiB) run
for each mode, the modes' runs interleaved, in three neighbour groups of
`sh -c 'while :; do :; done'` at normal priority: none; one pinned to the
memnode's CPU (its host is busy, the client's is not); one pinned to the
client's CPU (the other way round); one on every CPU, unpinned. A fresh memnode per run. Per run: the client's median and p99
read and write latency; medians and min/max over --runs, ratios to sched
normal in the same group. Writes bench/results/memnode-busy-<UTC>.json
(schema comex-bench-memnode-busy/1).

  python3 bench/memnode_busy.py [--build DIR] [--runs 3] [--iters 5000]
      [--modes normal,slice,fifo] [--groups none,memnode-cpu,client-cpu,all]
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import benchlib
from benchlib import check, md_row, summary

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import sysenv  # noqa: E402

SCHEMA = "comex-bench-memnode-busy/1"
CLIENT_CPU = 0
POOL_MIB = 64


def memnode_cpu():
    return max(os.sched_getaffinity(0))


def start_hogs(group):
    if group == "none":
        return []
    if group in ("memnode-cpu", "client-cpu"):
        return benchlib.start_hogs(1, memnode_cpu() if group == "memnode-cpu" else CLIENT_CPU)
    return benchlib.start_hogs(len(os.sched_getaffinity(0)))


def one_run(a, comex, bench, mode, token, tmp, tag):
    pin = ["taskset", "-c", str(memnode_cpu())]
    mn = sysenv.Memnode(comex, token, POOL_MIB << 20, tmp, name=f"memnode-{tag}", extra=("--sched", mode),
                        wrap=lambda cmd: pin + cmd, base_env=benchlib.clean_env())
    mn.start()
    try:
        p = subprocess.run([bench, "comex", "--size", "4096", "--iters", str(a.iters), "--cpu", str(CLIENT_CPU),
                            "--memnode", mn.addr, "--token-file", token],
                           capture_output=True, text=True, env=benchlib.clean_env(), timeout=900)
    finally:
        mn.terminate()
    check(p.returncode == 0, f"transport_bench exited {p.returncode}: {p.stderr.strip()[-1500:]}")
    res = {r["op"]: r for r in map(json.loads, (ln for ln in p.stdout.splitlines() if ln.startswith("{")))}
    return {f"{op}_{k}": res[op][k] for op in ("read", "write") for k in ("median_us", "p99_us")}


def group_runs(a, comex, bench, group, token, tmp):
    runs = {m: [] for m in a.modes}
    hogs = start_hogs(group)
    try:
        for r in range(a.runs):
            order = a.modes if r % 2 == 0 else a.modes[::-1]
            for mode in order:
                res = one_run(a, comex, bench, mode, token, tmp, f"{group}-{mode}-{r}")
                runs[mode].append(res)
                print(f"{group} sched={mode}: read p50 {res['read_median_us']:.1f} us p99 {res['read_p99_us']:.1f} us, "
                      f"write p50 {res['write_median_us']:.1f} us", flush=True)
    finally:
        benchlib.stop_hogs(hogs)
    med = {m: {k: summary([x[k] for x in v]) for k in v[0]} for m, v in runs.items()}
    ratio = {m: round(med[m]["read_median_us"]["median"] / med[a.modes[0]]["read_median_us"]["median"], 3)
             for m in a.modes}
    return {"group": group, "runs": runs, "median": med, "read_p50_ratio": ratio}


def main(argv):
    ap = benchlib.arg_parser(__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=5000)
    ap.add_argument("--modes", default="normal,slice,fifo")
    ap.add_argument("--groups", default="none,memnode-cpu,client-cpu,all")
    a = benchlib.quick(ap.parse_args(argv), iters=300, modes="normal,fifo", groups="none,memnode-cpu")
    a.modes = a.modes.split(",")
    build = Path(a.build).resolve()
    comex, bench = str(build / "comex"), str(build / "transport_bench")
    doc, times0 = benchlib.start_doc(SCHEMA, params=vars(a) | {"build": str(build), "memnode_cpu": memnode_cpu(),
                                                                "client_cpu": CLIENT_CPU}, results=[])
    sysenv.install_signal_handlers()
    try:
        with tempfile.TemporaryDirectory(prefix="comex-memnode-busy-") as tmp:
            token = benchlib.make_token(comex, tmp)
            for group in a.groups.split(","):
                doc["results"].append(group_runs(a, comex, bench, group, token, tmp))
    finally:
        sysenv.UNDO.run_all()
    benchlib.finish_doc(doc, times0, "memnode-busy", a)
    print(md_row("neighbours", *(f"{m}: read p50 / p99 us" for m in a.modes)))
    for r in doc["results"]:
        print(md_row(r["group"], *(f"{r['median'][m]['read_median_us']['median']:.1f} / "
                                   f"{r['median'][m]['read_p99_us']['median']:.0f} ({r['read_p50_ratio'][m]:.2f}x)"
                                   for m in a.modes)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
