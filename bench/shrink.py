#!/usr/bin/env python3
"""The elastic shrink (issue 11 item 2): how fast a full memnode gives memory
back to its host when clients must move their pages off first.

Memnode `a` (--pool, --host-reserve) runs in a memory cgroup of its own (v1
or v2, made here; root needed); memnode `b` runs outside with room for
everything. tests/progs/prog_gate fills --program-mib under `comex run` with
only `a` in its config file, so its remote pages land there and leave `a`
almost no free block; then `b` is added to the file and the program connects
to it. A hog in `a`'s cgroup then takes enough memory that the host is
--deficit-mib below the reserve. Measured from the moment the hog starts
(it fills its memory in about a second): when it holds all of it, when `a`
sends its first SHRINK, when its pool in service (`comex
status --json`, polled every 50 ms) is --deficit-mib smaller, and the pages
the program moved (its log). The hog then leaves, the pool grows back, the
program's gate opens and its output must equal the native run's.
--runs repetitions; writes bench/results/shrink-<UTC>.json (schema
comex-bench-shrink/1) with per-run records and medians.

  python3 bench/shrink.py [--build DIR] [--runs 3] [--pool-mib 512] [--program-mib 480] [--deficit-mib 256]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import sysenv  # noqa: E402

SCHEMA = "comex-bench-shrink/1"
POLL_S = 0.05
HEADROOM_MIB = 1024   # memnode a's cgroup: its pool, the reserve and this much more


def wait_for(pred, limit_s, what):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        v = pred()
        if v:
            return v
        time.sleep(POLL_S)
    raise RuntimeError(f"timed out after {limit_s} s waiting for {what}")


def pool_mib(comex, token, port):
    out = subprocess.run([comex, "status", "--json", "--interval", "0", "--memnode", f"127.0.0.1:{port}",
                          "--token-file", str(token)], capture_output=True, text=True, env=clean_env())
    try:
        return int(json.loads(out.stdout)["memnodes"][0]["pool_bytes"]) >> 20
    except (ValueError, KeyError, IndexError):
        return None


def one_run(a, comex, gate_prog, tmp, token, r, native_out):
    limit_mib = a.pool_mib + a.reserve_mib + a.headroom_mib
    cg = sysenv.Cgroup(limit_mib << 20, swap=True, name=f"shrink-{r}")
    procs, mns = [], []
    try:
        # started inside the cgroup, so that its pool is charged there and what
        # it gives back shows in the cgroup's usage, which it reads
        mn_a = sysenv.Memnode(comex, token, a.pool_mib << 20, tmp, name=f"a{r}", wrap=cg.wrap,
                              base_env=clean_env(),
                              extra=("--host-reserve", f"{a.reserve_mib}M", "--hugepages", "false"))
        mns.append(mn_a)
        mn_a.start()
        mn_b = sysenv.Memnode(comex, token, (a.program_mib + 256) << 20, tmp, name=f"b{r}", base_env=clean_env())
        mns.append(mn_b)
        mn_b.start()
        port_a, port_b = mn_a.port, mn_b.port
        conf, gate = tmp / f"run{r}.conf", tmp / f"gate{r}"
        conf.write_text(f"memnode = 127.0.0.1:{port_a}\n")
        err = tmp / f"prog{r}.err"
        out = tmp / f"prog{r}.out"
        stats = tmp / f"prog{r}.json"
        with open(out, "w") as fo, open(err, "w") as fe:
            # log-level 2: the runtime says "connected" only when asked for info (D41)
            prog = subprocess.Popen([comex, "run", f"--local-mem={a.local_mib}M", "--log-level=2", f"--config={conf}",
                                     f"--token-file={token}", f"--stats-json={stats}", "--", gate_prog,
                                     str(a.program_mib), str(gate), "idle"], stdout=fo, stderr=fe, env=clean_env())
        procs.append(prog)
        wait_for(lambda: "filled" in (benchlib.read_text(out) or ""), 600, "the program to fill its memory")
        conf.write_text(f"memnode = 127.0.0.1:{port_a}, 127.0.0.1:{port_b}\n")
        wait_for(lambda: re.search(rf"127\.0\.0\.1:{port_b} \(nid \d+\) connected", benchlib.read_text(err) or ""),
                 60, "the program to connect to memnode b")
        pool0 = pool_mib(comex, token, port_a)
        # the host must end up deficit-mib short of the reserve: what the
        # cgroup still allows now, less the reserve, plus the deficit
        hog_mib = limit_mib - (cg.usage() >> 20) - a.reserve_mib + a.deficit_mib
        ready, stop = tmp / f"hog{r}.ready", tmp / f"hog{r}.stop"
        t0 = time.monotonic()  # the host starts running short as the hog fills
        hog = subprocess.Popen(cg.wrap([sys.executable, "-c",
                                        "import os, sys, time\nb = bytearray(int(sys.argv[1]) << 20)\n"
                                        "for i in range(0, len(b), 4096): b[i] = 1\n"
                                        "open(sys.argv[2], 'w').write('ready')\n"
                                        "while not os.path.exists(sys.argv[3]): time.sleep(0.02)\n",
                                        str(hog_mib), str(ready), str(stop)]))
        procs.append(hog)
        wait_for(lambda: ready.exists(), 120, "the hog")
        t_ready = time.monotonic() - t0
        log_a = tmp / f"a{r}.log"
        wait_for(lambda: "asking the clients holding frames" in (benchlib.read_text(log_a) or ""), 60,
                 "memnode a's first SHRINK")
        t_shrink = time.monotonic() - t0
        target = pool0 - a.deficit_mib
        wait_for(lambda: (pool_mib(comex, token, port_a) or 1 << 30) <= target, 300,
                 f"memnode a's pool to fall to {target} MiB")
        t_given = time.monotonic() - t0
        pool1 = pool_mib(comex, token, port_a)
        moved = sum(int(m) for m in re.findall(r"(\d+) pages moved off frames", benchlib.read_text(err) or ""))
        stop.write_text("")
        hog.wait()
        wait_for(lambda: pool_mib(comex, token, port_a) == pool0, 300, "memnode a's pool to grow back")
        t_back = time.monotonic() - t0
        gate.write_text("")
        rc = prog.wait()
        check(rc == 0 and (benchlib.read_text(out) or "") == native_out,
              f"run {r}: exit {rc} or output differs from the native run: {(benchlib.read_text(err) or '')[-1500:]}")
        s = json.loads(stats.read_text())
        rec = {"hog_mib": hog_mib, "hog_ready_s": round(t_ready, 3), "pool_before_mib": pool0, "pool_after_mib": pool1,
               "first_shrink_s": round(t_shrink, 3), "deficit_given_s": round(t_given, 3),
               "grown_back_s": round(t_back, 3), "pages_moved_logged": moved,
               "pages_migrated": s["pages_migrated"], "pages_migrated_home": s["pages_migrated_home"],
               "moved_mib_per_s": round(moved / 256 / max(t_given - t_shrink, 1e-3), 1)}
        print(f"run {r}: hog filled after {t_ready:.2f} s, first SHRINK after {t_shrink:.2f} s, {a.deficit_mib} MiB given back after {t_given:.2f} s "
              f"({moved} pages moved), pool {pool0} -> {pool1} MiB", file=sys.stderr)
        return rec
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.kill()
            p.wait()
        for m in reversed(mns):
            m.close()
        cg.remove()


def main(argv):
    ap = benchlib.arg_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--pool-mib", type=int, default=512)
    ap.add_argument("--program-mib", type=int, default=480)
    ap.add_argument("--local-mib", type=int, default=64)
    ap.add_argument("--deficit-mib", type=int, default=256)
    ap.add_argument("--reserve-mib", type=int, default=512, help="memnode a's --host-reserve")
    ap.add_argument("--headroom-mib", type=int, default=HEADROOM_MIB)
    a = benchlib.quick(ap.parse_args(argv), pool_mib=64, program_mib=48, local_mib=16, deficit_mib=32,
                       reserve_mib=64, headroom_mib=128)
    why = sysenv.cgroup_precondition()
    if why:
        print(f"bench/shrink.py: {why}", file=sys.stderr)
        return 77
    build = Path(a.build).resolve()
    comex, gate_prog = str(build / "comex"), str(build / "progs" / "prog_gate")
    setup = {"pool_mib": a.pool_mib, "host_reserve_mib": a.reserve_mib, "program_mib": a.program_mib,
             "local_mib": a.local_mib, "deficit_mib": a.deficit_mib, "runs": a.runs,
             "memnodes": "a in its own memory cgroup (--host-reserve), b outside; loopback TCP",
             "program": "prog_gate MiB GATE idle (fills, then waits; checked at the end)"}
    doc, times0 = benchlib.start_doc(SCHEMA, setup=setup, runs=[])
    sysenv.install_signal_handlers()
    try:
        with tempfile.TemporaryDirectory(prefix="comex-shrink-") as td:
            tmp = Path(td)
            token = benchlib.make_token(comex, tmp)
            native = subprocess.run([gate_prog, str(a.program_mib), "/"], capture_output=True, text=True, check=True)
            for r in range(a.runs):
                doc["runs"].append(one_run(a, comex, gate_prog, tmp, token, r, native.stdout))
    finally:
        sysenv.UNDO.run_all()
    doc["summary"] = {k: summary([x[k] for x in doc["runs"]], 3)
                      for k in ("hog_ready_s", "first_shrink_s", "deficit_given_s", "grown_back_s", "pages_moved_logged",
                                "moved_mib_per_s")}
    for k, v in doc["summary"].items():
        print(f"{k}: median {v['median']} (min {v['min']}, max {v['max']})")
    benchlib.finish_doc(doc, times0, "shrink", a)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
