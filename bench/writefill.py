#!/usr/bin/env python3
"""write-fill (docs/DECISIONS.md D26): eviction with and without rewriting the
unchanged pages that sit between changed ones in a write buffer's run of
frames, on a quiet machine and beside a CPU-bound neighbour on every core.

pager_bench (--size-mib, 3 passes, 20 % writes) runs under `comex run` with
its embedded memnode at 25 % of its native peak RSS, with write-fill on and
off, runs interleaved (on, off, on, off...) so that drift in the machine's
load hits both alike; guest memory is warmed before every run (docs/DECISIONS.md
D72). Neighbours: none, `stress-ng --cpu N` and the same under nice 19, started
before the first run of a group and stopped after its last. Every run's
checksum must equal the native run's. Records per run the wall time, remote
writes, bytes written and eviction time; writes
bench/results/writefill-<UTC>.json (schema comex-bench-writefill/1) with
medians and the on/off ratio per pattern and neighbour.

  python3 bench/writefill.py [--build DIR] [--runs 3] [--size-mib 508] [--patterns seq,rand]
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib
from benchlib import clean_env, summary

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import sysenv  # noqa: E402  (bench/harness, importable as a package from bench/)

SCHEMA = "comex-bench-writefill/1"
NEIGHBOURS = {"none": None, "stress": ["stress-ng", "--cpu", "0", "--quiet"],
              "stress-nice": ["nice", "-n", "19", "stress-ng", "--cpu", "0", "--quiet"]}
KEYS = ("remote_writes", "bytes_written", "ns_evict", "pages_written_fill", "faults_remote")


def bench_argv(build, pattern, size_mib):
    return [str(build / "pager_bench"), "--pattern", pattern, "--size-mib", str(size_mib), "--passes", "3",
            "--write-pct", "20", "--seed", "1"]


def native(build, pattern, size_mib):
    """(checksum, peak RSS KiB, wall s) of the plain run."""
    return benchlib.native_peak(bench_argv(build, pattern, size_mib), lambda: sysenv.warm_guest_memory(size_mib + 64))


def run(build, pattern, size_mib, local_kib, fill, tmp, want_out):
    stats = Path(tmp) / "stats.json"
    sysenv.warm_guest_memory(size_mib + 64)
    t = time.monotonic()
    p = subprocess.run([str(build / "comex"), "run", f"--local-mem={local_kib}K", f"--write-fill={str(fill).lower()}",
                        f"--stats-json={stats}", "--", *bench_argv(build, pattern, size_mib)],
                       capture_output=True, text=True, env=clean_env())
    wall = time.monotonic() - t
    got = json.loads(p.stdout)["checksum"] if p.returncode == 0 else None
    if got != want_out:
        raise SystemExit(f"{pattern} write-fill {fill}: exit {p.returncode}, checksum {got} against the native "
                         f"{want_out}:\n{p.stderr[-2000:]}")
    s = json.loads(stats.read_text())
    return {"time_s": round(wall, 4), "checksum": got, **{k: s.get(k, 0) for k in KEYS}}


def main():
    ap = benchlib.arg_parser(__doc__.split("\n")[0])
    ap.add_argument("--size-mib", type=int, default=508)
    ap.add_argument("--patterns", default="seq,rand")
    ap.add_argument("--neighbours", default="none,stress,stress-nice")
    a = ap.parse_args()
    build = Path(a.build).resolve()
    neighbours = a.neighbours.split(",")
    if any(n != "none" for n in neighbours) and not shutil.which("stress-ng"):
        raise SystemExit("stress-ng is not installed (apt-get install stress-ng)")
    doc, times0 = benchlib.start_doc(SCHEMA, params=vars(a) | {"build": str(build)}, results=[])
    with tempfile.TemporaryDirectory(prefix="comex-writefill-") as tmp:
        for pattern in a.patterns.split(","):
            out, peak, tn = native(build, pattern, a.size_mib)
            local_kib = peak // 4
            for nb in neighbours:
                hog = subprocess.Popen(NEIGHBOURS[nb]) if NEIGHBOURS[nb] else None
                try:
                    time.sleep(1 if hog else 0)
                    runs = {True: [], False: []}
                    for _ in range(a.runs):
                        for fill in (True, False):
                            r = run(build, pattern, a.size_mib, local_kib, fill, tmp, out)
                            runs[fill].append(r)
                            print(f"{pattern} {nb} write-fill {'on ' if fill else 'off'}: {r['time_s']:.2f} s, "
                                  f"{r['remote_writes']} writes, eviction {r['ns_evict'] / 1e9:.2f} s", flush=True)
                finally:
                    if hog:
                        hog.terminate()
                        hog.wait()
                med = {f: {k: summary([r[k] for r in runs[f]]) for k in ("time_s", "remote_writes", "bytes_written",
                                                                          "ns_evict")} for f in (True, False)}
                doc["results"].append({
                    "pattern": pattern, "neighbour": nb, "native_s": round(tn, 4), "peak_kib": peak,
                    "local_mem_kib": local_kib, "on": runs[True], "off": runs[False],
                    "median_on": med[True], "median_off": med[False],
                    "time_ratio_on_off": round(med[True]["time_s"]["median"] / med[False]["time_s"]["median"], 3)})
    benchlib.finish_doc(doc, times0, "writefill")
    for r in doc["results"]:
        on, off = r["median_on"], r["median_off"]
        print(f"| {r['pattern']} | {r['neighbour']} | {off['time_s']['median']:.2f} | {on['time_s']['median']:.2f} | "
              f"{r['time_ratio_on_off']:.2f}x | {off['remote_writes']['median']:.0f} | {on['remote_writes']['median']:.0f} | "
              f"{off['ns_evict']['median'] / 1e9:.2f} | {on['ns_evict']['median'] / 1e9:.2f} |")


if __name__ == "__main__":
    main()
