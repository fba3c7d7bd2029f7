#!/usr/bin/env python3
"""The cost of replication: bench/pager_bench under `comex run` at 25 % of
its native peak RSS with --replicas 1 and --replicas 2, against the same two
memnodes (started here, on loopback), each configuration --runs times in
alternating order. Writes bench/results/replicas-<UTC timestamp>.json
(schema comex-bench-replicas/1) with per-run records and medians: run time,
eviction time per evicted page (the runtime's ns_evict), bytes written to
memnodes and their rate. A checksum that differs from the native run is a
hard failure.

  python3 bench/replicas.py [--build DIR] [--runs 3] [--size-mib 256] [--patterns seq,rand]
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib
from benchlib import (RESULTS_DIR, clean_env, cpu_times, finish_machine_info, git_revision, machine_info,
                      start_memnode, summary)

SCHEMA = "comex-bench-replicas/1"


def run(cmd, tmp, tag):
    rc, wall, maxrss, res = benchlib.run_logged(cmd, tmp, tag)
    if rc or res is None:
        raise RuntimeError(f"{' '.join(cmd)} failed: {(benchlib.read_text(tmp / f'{tag}.err') or '')[-1500:]}")
    return res, wall, maxrss


def main(argv):
    ap = benchlib.arg_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--write-pct", type=int, default=10)
    ap.add_argument("--patterns", default="seq,rand")
    ap.add_argument("--out-dir", default=str(RESULTS_DIR))
    a = ap.parse_args(argv)
    build = Path(a.build).resolve()
    comex, bench = str(build / "comex"), str(build / "pager_bench")
    times0, machine = cpu_times(), machine_info()
    results = {"schema": SCHEMA, "git": git_revision(), "machine": machine,
               "workload": {"size_mib": a.size_mib, "passes": a.passes, "write_pct": a.write_pct,
                            "patterns": a.patterns.split(","), "runs": a.runs, "level_pct": 25},
               "memnodes": "two `comex memnode` on 127.0.0.1 (TCP, validated data path), pool size + 64 MiB each",
               "configs": {}}
    with tempfile.TemporaryDirectory(prefix="comex-replicas-") as td:
        tmp = Path(td)
        token = tmp / "token"
        subprocess.run([comex, "token", str(token)], check=True, stdout=subprocess.DEVNULL, env=clean_env())
        nodes = [start_memnode(comex, tmp, n, token, a.size_mib + 64)[:2] for n in ("a", "b")]
        try:
            for pat in a.patterns.split(","):
                wl = [bench, "--pattern", pat, "--size-mib", str(a.size_mib), "--passes", str(a.passes),
                      "--write-pct", str(a.write_pct), "--seed", "1"]
                ref, _, peak_kib = run(wl, tmp, f"{pat}-native")
                lm = f"{peak_kib // 4}K"
                recs = {1: [], 2: []}
                for r in range(a.runs):
                    for rep in ((1, 2) if r % 2 == 0 else (2, 1)):
                        st = tmp / f"{pat}-r{rep}-{r}.json"
                        cmd = [comex, "run", f"--local-mem={lm}", f"--replicas={rep}", f"--token-file={token}",
                               "--memnode=" + ",".join(f"127.0.0.1:{port}" for _, port in nodes),
                               f"--stats-json={st}", "--"] + wl
                        res, wall, _ = run(cmd, tmp, f"{pat}-r{rep}-{r}")
                        if res["checksum"] != ref["checksum"]:
                            raise RuntimeError(f"{pat} replicas {rep}: checksum {res['checksum']} != native "
                                               f"{ref['checksum']}")
                        s = json.loads(st.read_text())
                        t = res["fill_s"] + res["access_s"]
                        recs[rep].append({"total_s": t, "wall_s": round(wall, 4), "pages_evicted": s["pages_evicted"],
                                          "pages_written": s["pages_written"], "bytes_written": s["bytes_written"],
                                          "ns_evict": s["ns_evict"], "remote_writes": s["remote_writes"],
                                          "evict_us_per_page": s["ns_evict"] / max(1, s["pages_evicted"]) / 1000,
                                          "write_mib_s": s["bytes_written"] / 2**20 / t})
                        print(f"{pat} replicas {rep} run {r}: {t:.2f} s, "
                              f"{recs[rep][-1]['evict_us_per_page']:.1f} us/evicted page", file=sys.stderr)
                for rep, rl in recs.items():
                    results["configs"][f"{pat}-replicas{rep}"] = {
                        "local_mem": lm, "native_total_s": ref["fill_s"] + ref["access_s"], "runs": rl,
                        **{k: summary([x[k] for x in rl], 4) for k in
                           ("total_s", "evict_us_per_page", "write_mib_s", "bytes_written")}}
        finally:
            for p, _ in nodes:
                p.kill()
                p.wait()
    finish_machine_info(machine, times0)
    out = Path(a.out_dir) / f"replicas-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(out)
    for name, c in results["configs"].items():
        print(f"{name}: total {c['total_s']['median']:.2f} s, evict {c['evict_us_per_page']['median']:.1f} us/page, "
              f"written {c['bytes_written']['median'] / 2**20:.0f} MiB at {c['write_mib_s']['median']:.0f} MiB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
