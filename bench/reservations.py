#!/usr/bin/env python3
"""reservations (docs/DECISIONS.md D50): a big MAP_NORESERVE reservation touched
sparsely, natively and under `comex run` with the default region and with
the old 64 GiB one, side by side in one run.

prog_sparse reserves --reserve-gib, writes --touch-mib of it in pieces of
each --pieces KiB spread evenly over the whole reservation, reads every piece
back twice and prints a checksum (which must equal the native run's), then
its VmHWM, RssFile and RssShmem. Per run: wall time, the process's own peak
memory (VmHWM less file and shared pages), the memory outside the managed
region at peak, the time local-mem was not kept, the bytes mapped outside
the region, pages evicted and remote reads. Configurations run interleaved,
--runs times each; medians and min/max, ratios of own memory to local-mem.
Writes bench/results/reservations-<UTC>.json (schema comex-bench-reservations/1).

  python3 bench/reservations.py [--build DIR] [--runs 3] [--reserve-gib 256] [--touch-mib 512]
      [--pieces 64,4] [--local-mem-mib 128]
"""

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib
from benchlib import check, clean_env, summary

SCHEMA = "comex-bench-reservations/1"
STATS = ("outside_anon_peak_bytes", "budget_unkept_ms", "bytes_mapped_outside", "pages_evicted", "remote_reads",
         "resident_peak_bytes")


def own_kib(stderr):
    v = {k: int(n) for k, n in re.findall(r"^(VmHWM|RssFile|RssShmem):\s+(\d+) kB", stderr, re.M)}
    return v.get("VmHWM", 0) - v.get("RssFile", 0) - v.get("RssShmem", 0)


def run(build, argv, config, local_mib, tmp):
    stats = Path(tmp) / "stats.json"
    stats.unlink(missing_ok=True)
    cmd = argv if config == "native" else [str(build / "comex"), "run", f"--local-mem={local_mib}M",
                                           f"--stats-json={stats}", *(["--region=64G"] if config == "region-64G" else []),
                                           "--", *argv]
    t = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=clean_env())
    wall = time.monotonic() - t
    check(p.returncode == 0, f"{config}: exit {p.returncode}:\n{p.stderr[-2000:]}")
    s = json.loads(stats.read_text()) if stats.exists() else {}
    return {"time_s": round(wall, 4), "checksum": p.stdout.split()[-1], "own_peak_kib": own_kib(p.stderr),
            "warned_unkept": "was not kept" in p.stderr, "warned_outside": "finds no room" in p.stderr,
            **{k: s.get(k, 0) for k in STATS}}


def main(argv):
    ap = benchlib.arg_parser(__doc__.split("\n")[0])
    ap.add_argument("--reserve-gib", type=int, default=256)
    ap.add_argument("--touch-mib", type=int, default=512)
    ap.add_argument("--pieces", default="64,4", help="piece sizes to run, KiB")
    ap.add_argument("--local-mem-mib", type=int, default=128)
    a = benchlib.quick(ap.parse_args(argv), reserve_gib=16, touch_mib=16, pieces="64", local_mem_mib=8)
    build = Path(a.build).resolve()
    configs = ["native", "comex", "region-64G"]
    doc, times0 = benchlib.start_doc(SCHEMA, params=dict(vars(a)) | {"build": str(build)}, results=[])
    with tempfile.TemporaryDirectory(prefix="comex-reservations-") as tmp:
        for kib in (int(k) for k in a.pieces.split(",")):
            argv = [str(build / "progs" / "prog_sparse"), str(a.reserve_gib), str(a.touch_mib), str(kib)]
            runs = {c: [] for c in configs}
            for i in range(a.runs):
                for c in (configs if i % 2 == 0 else configs[::-1]):
                    r = run(build, argv, c, a.local_mem_mib, tmp)
                    runs[c].append(r)
                    print(f"{kib} KiB pieces, {c}: {r['time_s']:.2f} s, own peak {r['own_peak_kib'] >> 10} MiB, "
                          f"outside {r['outside_anon_peak_bytes'] >> 20} MiB, unkept {r['budget_unkept_ms']} ms",
                          flush=True)
            want = runs["native"][0]["checksum"]
            bad = [(c, r["checksum"]) for c in configs for r in runs[c] if r["checksum"] != want]
            check(not bad, f"checksums differ from the native {want}: {bad}")
            keys = ("time_s", "own_peak_kib", "outside_anon_peak_bytes", "budget_unkept_ms")
            med = {c: {k: summary([r[k] for r in runs[c]]) for k in keys} for c in configs}
            doc["results"].append({
                "piece_kib": kib, "pieces": a.touch_mib * 1024 // kib, "runs": runs, "median": med,
                "time_ratio_to_native": {c: round(med[c]["time_s"]["median"] / med["native"]["time_s"]["median"], 3)
                                         for c in configs},
                "own_peak_to_local_mem": {c: round(med[c]["own_peak_kib"]["median"] / (a.local_mem_mib * 1024), 3)
                                          for c in configs}})
    benchlib.finish_doc(doc, times0, "reservations", a)
    print(f"| pieces | config | time s (x native) | own peak MiB (x local-mem {a.local_mem_mib}M) | outside MiB | "
          "not kept ms |")
    for r in doc["results"]:
        for c in configs:
            m = r["median"][c]
            print(f"| {r['pieces']} x {r['piece_kib']} KiB | {c} | {m['time_s']['median']:.2f} "
                  f"({r['time_ratio_to_native'][c]:.2f}x) | {m['own_peak_kib']['median'] / 1024:.0f} "
                  f"({r['own_peak_to_local_mem'][c]:.2f}x) | {m['outside_anon_peak_bytes']['median'] / 2**20:.0f} | "
                  f"{m['budget_unkept_ms']['median']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
