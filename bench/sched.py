#!/usr/bin/env python3
"""sched (docs/DECISIONS.md D36): how the threads a fault waits on are scheduled
(option sched: normal, slice, fifo), on a quiet machine and beside CPU-bound
neighbours at normal priority; a mode build:DIR runs another build's comex
(sched normal) for an A/B of two versions, a mode of comex run flags
(joined by '+') any other configuration.

pager_bench (fill --size-mib, --passes passes touching every page in the
pattern's order, 10 % writes, every touch timed) runs under `comex run` with
its embedded memnode at --fraction of its native peak RSS, once per sched
mode, runs interleaved (normal, slice, fifo, normal, ...) so that drift in
the machine hits every mode alike; guest memory is warmed before every run.
Neighbours: none, one and two `sh -c 'while :; do :; done'` at normal
priority, started before a group's first run and stopped after its last.
Every run's checksum must equal the native run's. Per run: wall time, the
access phase, the program-side fault latency (median, p99) and the
handler-side remote read time; medians and min/max over --runs, ratios to
sched normal in the same neighbour group. Writes
bench/results/sched-<UTC>.json (schema comex-bench-sched/1).

  python3 bench/sched.py [--build DIR] [--runs 3] [--size-mib 512] [--patterns rand,seq]
      [--modes normal,slice,fifo,build:DIR] [--neighbours 0,1,2] [--fraction 0.25]
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib
from benchlib import clean_env, md_row, summary

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import sysenv  # noqa: E402

SCHEMA = "comex-bench-sched/1"
HOG = ["sh", "-c", "while :; do :; done"]
STATS = ("faults_remote", "remote_reads", "ns_read", "ns_remote", "ns_evict", "pages_evicted")


def bench_argv(build, pattern, size_mib, passes):
    return [str(build / "pager_bench"), "--pattern", pattern, "--size-mib", str(size_mib), "--passes", str(passes),
            "--write-pct", "10", "--seed", "1", "--time-touches", "1"]


def comex_argv(build, mode):
    """A mode is a sched value; build:DIR (that build's comex, sched normal,
    or build:DIR+FLAGS with comex run flags joined by '+');
    or comex run flags joined by '+' (--embedded-rma=true+--sched=fifo)."""
    if mode.startswith("build:"):
        other, *flags = mode[6:].split("+")
        return [str(Path(other).resolve() / "comex"), "run", *(flags or ["--sched=normal"])]
    if mode.startswith("--"):
        return [str(build / "comex"), "run", *mode.split("+")]
    return [str(build / "comex"), "run", f"--sched={mode}"]


def run(build, argv, size_mib, local_kib, mode, tmp, want):
    stats = Path(tmp) / "stats.json"
    sysenv.warm_guest_memory(size_mib + 64)
    t = time.monotonic()
    # stdin /dev/null, readable at once: until D45 the fault handler polled
    # descriptor 0 and spun whenever it was (as under this harness)
    p = subprocess.run([*comex_argv(build, mode), f"--local-mem={local_kib}K", f"--stats-json={stats}", "--", *argv],
                       capture_output=True, text=True, env=clean_env(), stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t
    out = json.loads(p.stdout) if p.returncode == 0 else {}
    if out.get("checksum") != want:
        raise SystemExit(f"sched {mode}: exit {p.returncode}, checksum {out.get('checksum')} against the native "
                         f"{want}:\n{p.stderr[-2000:]}")
    s = json.loads(stats.read_text())
    return {"time_s": round(wall, 4), "access_s": out["access_s"], "fault_median_us": out["fault_median_us"],
            "fault_p99_us": out["fault_p99_us"], **{k: s.get(k, 0) for k in STATS}}


def group(a, build, pattern, hogs, argv, local_kib, want, tmp):
    procs = [subprocess.Popen(HOG) for _ in range(hogs)]
    runs = {m: [] for m in a.modes}
    try:
        time.sleep(1 if procs else 0)
        for i in range(a.runs):
            for mode in (a.modes if i % 2 == 0 else a.modes[::-1]):
                r = run(build, argv, a.size_mib, local_kib, mode, tmp, want)
                runs[mode].append(r)
                print(f"{pattern} neighbours={hogs} sched={mode}: {r['time_s']:.2f} s, faults p50 "
                      f"{r['fault_median_us']:.1f} us p99 {r['fault_p99_us']:.1f} us", flush=True)
    finally:
        for p in procs:
            p.terminate()
            p.wait()
    keys = ("time_s", "access_s", "fault_median_us", "fault_p99_us")
    med = {m: {k: summary([r[k] for r in runs[m]]) for k in keys} for m in a.modes}
    base = med[a.modes[0]]["time_s"]["median"]
    return {"pattern": pattern, "neighbours": hogs, "runs": runs, "median": med,
            "time_ratio": {m: round(med[m]["time_s"]["median"] / base, 3) for m in a.modes}}


def main():
    ap = benchlib.arg_parser(__doc__.split("\n")[0])
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--patterns", default="rand,seq")
    ap.add_argument("--modes", default="normal,slice,fifo")
    ap.add_argument("--neighbours", default="0,1,2")
    ap.add_argument("--fraction", type=float, default=0.25)
    a = ap.parse_args()
    a.modes = a.modes.split(",")
    build = Path(a.build).resolve()
    doc, times0 = benchlib.start_doc(SCHEMA, params=dict(vars(a)) | {"build": str(build)}, results=[])
    with tempfile.TemporaryDirectory(prefix="comex-sched-") as tmp:
        for pattern in a.patterns.split(","):
            argv = bench_argv(build, pattern, a.size_mib, a.passes)
            want, peak, tn = benchlib.native_peak(argv, lambda: sysenv.warm_guest_memory(a.size_mib + 64))
            local_kib = int(peak * a.fraction)
            for hogs in (int(n) for n in a.neighbours.split(",")):
                r = group(a, build, pattern, hogs, argv, local_kib, want, tmp)
                doc["results"].append(r | {"native_s": round(tn, 4), "peak_kib": peak, "local_mem_kib": local_kib})
    benchlib.finish_doc(doc, times0, "sched")
    print(md_row("pattern", "neighbours", *(f"{m} s (p50/p99 us)" for m in a.modes)))
    for r in doc["results"]:
        print(md_row(r["pattern"], r["neighbours"], *(f"{r['median'][m]['time_s']['median']:.2f} "
                                                      f"({r['median'][m]['fault_median_us']['median']:.1f}/"
                                                      f"{r['median'][m]['fault_p99_us']['median']:.0f}) "
                                                      f"{r['time_ratio'][m]:.2f}x" for m in a.modes)))


if __name__ == "__main__":
    main()
