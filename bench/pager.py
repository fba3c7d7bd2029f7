#!/usr/bin/env python3
"""Pager benchmark harness for comex (stdlib only, Python 3.11).

Runs bench/pager_bench (a synthetic workload: fill N MiB, then K passes
touching every page once, in order, in random order or in 16-page strides)
natively and under `comex run` against its embedded memnode, all in one run,
measures the fault-path floor of the machine next to it, and writes

  bench/results/pager-<UTC timestamp>.json   (schema comex-bench-pager/2)
  docs/PAGER-BENCH.md                        (regenerated from the newest JSON)

Per pattern (seq, rand, stride) it measures: native; comex with everything
fitting in the budget ("fits": native peak RSS + the runtime's buffers +
slack); comex at 50 % and 25 % of the native peak RSS (local-mem includes the
runtime's buffers, as for every `comex run`); optionally 100 %, eviction
policy fifo against clock and handler spin 0 / 200 us (--levels, --variants).
Every access-phase page touch is timed inside the program: touches slower
than 2 us are faults, and their median and p99 are the per-fault latency
the program sees. The floor (bench/uffd_floor's same-core userfaultfd round
trip + bench/transport_bench's 4 KiB read over UCX shared memory from a
polling memnode) is measured in every run; each configuration's median fault
latency is reported against it (target: within 1.5x).

Each configuration runs --runs times (order reversed on odd runs); results
are medians with min/max across runs and a warning when the spread exceeds
10 %. Slowdowns are against native; the handler-side latency breakdown comes
from the runtime's --stats-json counters. A checksum that differs from the
native run is a hard failure.

  python3 bench/pager.py [--build DIR] [--runs 3] [--size-mib 1024]
      [--patterns seq,rand,stride] [--levels fits,50,25] [--variants policy,spin]
      [--comex-flag=--prefetch=32 ...] [--out-dir DIR]
  python3 bench/pager.py --quick          # smoke run (~30 s): outputs checked, nothing kept
  python3 bench/pager.py --render-only    # just rewrite docs/PAGER-BENCH.md
"""

import argparse
import dataclasses
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import benchlib
import transport
from harness import sysenv
from benchlib import ROOT, SPREAD_LIMIT, pct, summary

SCHEMA = "comex-bench-pager/2"
NAME = "pager"
DOCS_PATH = ROOT / "docs" / "PAGER-BENCH.md"

DEFAULTS = {"size_mib": 1024, "passes": 2, "write_pct": 10, "seed": 1, "runs": 3}
QUICK = {"size_mib": 16, "passes": 1, "write_pct": 10, "seed": 1, "runs": 1}
PATTERNS = ("seq", "rand", "stride")
LEVELS = ("fits", "100", "50", "25")
DEFAULT_LEVELS = ("fits", "50", "25")
VARIANTS = ("policy", "spin", "writebehind", "reclaimer", "yield", "pool", "busy")
PAGE = 4096
STRIDE = 16                          # pager_bench --pattern stride default
FAULT_NS = 2000                      # a timed touch slower than this is a fault
RBUF_PAGES, WBUF_PAGES = 4096, 256   # comex defaults (docs/OPTIONS.md): count against local-mem
FITS_SLACK_KIB = 16 * 1024           # "fits": native peak RSS + buffers + this
MIN_EMBEDDED_POOL_MIB = 1024         # comex's default embedded-pool
POOL_SLACK_MIB = 512                 # embedded pool = max(default, footprint + this)
DEFAULT_SPIN = "50us"
FLOOR_TARGET = 1.5                   # issue: median remote fault within 1.5x of the floor
FLOOR_UFFD_ITERS = 20000
FLOOR_SHM_ITERS, QUICK_FLOOR_SHM_ITERS = 40000, 5000
FLOOR_CONFIG = "ucx-shm-poll"   # bench/transport.py's row for the 4 KiB shm read
FLOOR_POLL_WAIT_S = 15               # default --poll-wait: another memnode may hold the polling core
FLOOR_TIMEOUT_S = 300


def run_timeout(w):
    """Seconds a single run may take: comex at 25 % is 10-60x native today,
    and native is ~1.5 s per GiB and pass; generous, scales with the work."""
    return 600 + 4 * w["size_mib"] * w["passes"]


@dataclasses.dataclass(frozen=True)
class Config:
    """One way of running the workload."""
    name: str
    level: str | None = None         # None: native; "fits"; or a percentage of native peak RSS
    policy: str = "clock"
    spin: str = DEFAULT_SPIN
    group: str = "level"             # which table it belongs to: level, policy, spin, writebehind
    extra: tuple = ()                # further comex run flags
    hogs: int = 0                    # CPU-bound neighbours at normal priority beside the run (issue 21)

    @property
    def native(self):
        return self.level is None

    def flags(self, local_mem):
        return [f"--local-mem={local_mem}", f"--evict-policy={self.policy}", f"--handler-spin={self.spin}",
                *self.extra]

    def describe(self):
        d = dataclasses.asdict(self)
        d["comex_flags"] = None if self.native else self.flags("<local-mem>")
        return d


LEVEL_CONFIGS = {"fits": Config("fits", "fits"), "100": Config("100%", "100"),
                 "50": Config("50%", "50"), "25": Config("25%", "25")}
VARIANT_CONFIGS = {
    "policy": [Config("50% fifo", "50", policy="fifo", group="policy"),
               Config("25% fifo", "25", policy="fifo", group="policy")],
    "spin": [Config("25% spin 0", "25", spin="0", group="spin"),
             Config("25% spin 200us", "25", spin="200us", group="spin")],
    "writebehind": [Config("50% write-behind off", "50", extra=("--write-behind=false",), group="writebehind"),
                    Config("25% write-behind off", "25", extra=("--write-behind=false",), group="writebehind")],
    "reclaimer": [Config("50% reclaimer", "50", extra=("--reclaimer=true",), group="reclaimer"),
                  Config("25% reclaimer", "25", extra=("--reclaimer=true",), group="reclaimer")],
    "yield": [Config("50% handler pauses", "50", extra=("--handler-yield=false",), group="yield"),
              Config("25% handler pauses", "25", extra=("--handler-yield=false",), group="yield")],
    "pool": [Config("50% growing pool", "50", extra=("--embedded-pool=auto",), group="pool"),
             Config("25% growing pool", "25", extra=("--embedded-pool=auto",), group="pool")],
    # issue 21: every fault-path benchmark has a busy column beside the quiet one and the floor
    "busy": [Config("native busy", None, hogs=1, group="busy"),
             Config("50% busy", "50", hogs=1, group="busy"),
             Config("25% busy", "25", hogs=1, group="busy"),
             Config("25% busy sched fifo", "25", hogs=1, group="busy", extra=("--sched=fifo",)),
             Config("25% sched fifo", "25", group="busy", extra=("--sched=fifo",))],
}
NATIVE = Config("native")


def configs_for(levels, variants):
    """native, the chosen levels, then the chosen variant groups (in the
    order of LEVELS and VARIANTS, whatever the order on the command line)."""
    return [NATIVE] + [LEVEL_CONFIGS[x] for x in LEVELS if x in levels] + \
        [c for v in VARIANTS if v in variants for c in VARIANT_CONFIGS[v]]


# Per-fault latency classes: (label, ns counter, count counter), from src/stats.h.
FAULT_CLASSES = [
    ("zero fill", "ns_zero", "faults_zero"),
    ("write-buffer hit", "ns_wbuf_hit", "faults_wbuf_hit"),
    ("read-buffer (prefetch) hit", "ns_rbuf_hit", "faults_rbuf_hit"),
    ("remote read", "ns_remote", "faults_remote"),
    ("eviction, per page", "ns_evict", "pages_evicted"),
]
# Access-phase faults: everything but first-touch zero fills.
ACCESS_FAULTS = ("faults_remote", "faults_wbuf_hit", "faults_rbuf_hit", "faults_wp")
# pager_bench --time-touches 1 output: the program's own view of its faults.
SEEN_KEYS = ("faults_seen", "fault_median_us", "fault_p99_us", "fault_total_s")


# ------------------------------------------------------------------ processes

def run_measured(cmd, out_path, err_path, timeout):
    """Runs cmd in its own session; returns (status, wall seconds, rusage of
    it and its reaped descendants). Killed (the whole group) after timeout."""
    with open(out_path, "w") as out, open(err_path, "w") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=benchlib.clean_env(), start_new_session=True)
        timer = threading.Timer(timeout, lambda: os.killpg(p.pid, signal.SIGKILL))
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, wall, ru


def split_pattern(pattern):
    """'rand-t4' -> ('rand', 4): a pattern name may ask for T access threads."""
    base, _, t = pattern.partition("-t")
    return base, int(t) if t else 1


def workload_args(bench, pattern, w):
    base, threads = split_pattern(pattern)
    return benchlib.pager_bench_argv(None, base, w["size_mib"], w["passes"], w["write_pct"], w["seed"],
                                     time_touches=True, extra=("--fault-ns", FAULT_NS, "--threads", threads),
                                     binary=bench)


def embedded_pool_mib(w):
    return max(MIN_EMBEDDED_POOL_MIB, w['size_mib'] + POOL_SLACK_MIB)


def embedded_pool_flag(w):
    return f"--embedded-pool={embedded_pool_mib(w)}M"


def comex_cmd(ctx, cfg, local_mem, stats_path):
    """`comex run` with the pool, then the configuration's flags (a variant
    may choose another pool), then the user's --comex-flag ones (the last
    occurrence of an option wins)."""
    return [ctx["comex"], "run", embedded_pool_flag(ctx["workload"]), *cfg.flags(local_mem),
            *ctx["comex_flags"], f"--stats-json={stats_path}", "--"]


def parse_result(res):
    rec = {"fill_s": res["fill_s"], "access_s": res["access_s"], "total_s": res["fill_s"] + res["access_s"],
           "ns_per_page": res["ns_per_page"], "checksum": res["checksum"]}
    rec.update({k: res.get(k) for k in SEEN_KEYS})
    return rec


def run_once(ctx, cfg, pattern, local_mem, tag):
    """One run of the workload; returns its record (raises RuntimeError)."""
    tmp = Path(ctx["tmp"])
    stats_path = tmp / f"{tag}.stats.json"
    cmd = workload_args(ctx["bench"], pattern, ctx["workload"])
    if not cfg.native:
        stats_path.unlink(missing_ok=True)
        cmd = comex_cmd(ctx, cfg, local_mem, stats_path) + cmd
    if ctx["warm"]:  # the same for every configuration: what the run may touch fresh (program + pool)
        sysenv.warm_guest_memory(ctx["workload"]["size_mib"] + embedded_pool_mib(ctx["workload"]))
    hogs = benchlib.start_hogs(cfg.hogs)   # CPU-bound neighbours at normal priority
    try:
        rc, wall, ru = run_measured(cmd, tmp / f"{tag}.out", tmp / f"{tag}.err", run_timeout(ctx["workload"]))
    finally:
        benchlib.stop_hogs(hogs)
    err_tail = (benchlib.read_text(tmp / f"{tag}.err") or "").strip()[-1500:]
    if rc:
        raise RuntimeError(f"exit status {rc}: {' '.join(cmd)}\n{err_tail}")
    res = benchlib.json_line(benchlib.read_text(tmp / f"{tag}.out"))
    if not res:
        raise RuntimeError(f"no JSON line on stdout: {' '.join(cmd)}\n{err_tail}")
    rec = parse_result(res)
    rec.update(wall_s=round(wall, 4), cpu_s=round(ru.ru_utime + ru.ru_stime, 3), maxrss_kib=ru.ru_maxrss)
    if not cfg.native:
        try:
            rec["stats"] = json.loads(stats_path.read_text())
        except (OSError, ValueError) as e:
            raise RuntimeError(f"no stats JSON from comex run ({e}): {err_tail}")
        rec["local_mem"] = local_mem
    return rec


# ------------------------------------------------------------------ the floor

def run_uffd_floor(ctx):
    """bench/uffd_floor's JSON, or {'error': ...} (status 77: no userfaultfd)."""
    cmd = [ctx["uffd_floor"], "--iters", str(FLOOR_UFFD_ITERS)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=benchlib.clean_env(), timeout=FLOOR_TIMEOUT_S)
    if p.returncode:
        kind = "userfaultfd unavailable" if p.returncode == 77 else f"exit status {p.returncode}"
        return {"error": f"{kind}: {' '.join(cmd)}: {p.stderr.strip()[-500:]}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_shm_read(ctx):
    """The 4 KiB read of bench/transport.py's ucx-shm-poll row:
    transport_bench against a fresh polling `comex memnode --shm true`."""
    cfg = transport.config_by_name(FLOOR_CONFIG)
    tctx = {"comex": ctx["comex"], "bench": ctx["transport_bench"], "token": ctx["token"], "tmp": ctx["tmp"],
            "poll_wait_s": ctx["poll_wait_s"], "netns": None}
    mn = None
    try:
        mn = transport.start_memnode(tctx, cfg, "floor-memnode")
        res = transport.run_bench(tctx, cfg, PAGE, ctx["floor_shm_iters"], mn)
        return dict(res["read"], memnode_polling_core=mn.polling_core)
    except (RuntimeError, subprocess.SubprocessError, OSError, KeyError, ValueError) as e:
        return {"error": f"{FLOOR_CONFIG} 4 KiB read: {e}"}
    finally:
        if mn:
            try:
                mn.terminate()
            except RuntimeError:
                pass


def measure_floor(ctx, run):
    rec = {"run": run, "uffd": run_uffd_floor(ctx), "shm_read": run_shm_read(ctx)}
    ctx["floor"].append(rec)
    u, r = rec["uffd"], rec["shm_read"]
    for part in (u, r):
        if "error" in part:
            ctx["errors"].append({"pattern": "-", "config": "floor", "run": run, "error": part["error"]})
            print(f"  run {run} floor FAILED: {part['error']}", file=sys.stderr, flush=True)
    if "error" not in u and "error" not in r:
        sc = u["results"]["same_core"]
        print(f"  run {run} floor: uffd same-core {sc['median_us']:.1f} us (p99 {sc['p99_us']:.1f}), "
              f"shm 4 KiB read {r['median_us']:.1f} us (p99 {r['p99_us']:.1f}); memnode polling core "
              f"{r['memnode_polling_core']}", flush=True)


def floor_summary(samples):
    """Medians over runs of each floor component's median and p99, and
    floor = uffd same-core round trip + 4 KiB shm read (µs)."""
    out = {"uffd": {}, "shm_read": None, "floor_us": None, "floor_p99_us": None}
    uffd = [s["uffd"] for s in samples if "error" not in s["uffd"]]
    modes = sorted({m for u in uffd for m, v in u["results"].items() if v}, key=str)
    for m in modes:
        vals = [u["results"][m] for u in uffd if u["results"].get(m)]
        out["uffd"][m] = {k: round(statistics.median(v[k] for v in vals), 3)
                          for k in ("median_us", "p99_us", "mean_us")}
        out["uffd"][m]["runs"] = len(vals)
    reads = [s["shm_read"] for s in samples if "error" not in s["shm_read"]]
    polled = [r for r in reads if r.get("memnode_polling_core") is not None]
    if polled:  # the floor is that of a polling memnode; a run whose memnode slept is not it
        out["shm_read_runs_dropped"] = len(reads) - len(polled)
        reads = polled
    if reads:
        out["shm_read"] = {k: round(statistics.median(r[k] for r in reads), 3) for k in ("median_us", "p99_us")}
        out["shm_read"]["runs"] = len(reads)
        out["shm_read"]["memnode_polled"] = transport.polled(reads)
        out["shm_read"]["runs_dropped_memnode_slept"] = out.pop("shm_read_runs_dropped", 0)
    sc = out["uffd"].get("same_core")
    if sc and out["shm_read"]:
        out["floor_us"] = round(sc["median_us"] + out["shm_read"]["median_us"], 3)
        out["floor_p99_us"] = round(sc["p99_us"] + out["shm_read"]["p99_us"], 3)
    return out


# ------------------------------------------------------------------ the run

def local_mem_for(cfg, footprint_kib):
    """local-mem for a configuration, as a K-suffixed size."""
    if cfg.level == "fits":
        return f"{footprint_kib + (RBUF_PAGES + WBUF_PAGES) * PAGE // 1024 + FITS_SLACK_KIB}K"
    return f"{footprint_kib * int(cfg.level) // 100}K"


def calibrate(ctx):
    """Untimed warm-up: one native run per pattern (its peak RSS is the
    footprint, its checksum the reference) and one comex run, so that the
    host has backed the memory and the binaries are in the page cache."""
    for pattern in ctx["patterns"]:
        rec = run_once(ctx, NATIVE, pattern, None, f"calib-{pattern}")
        ctx["footprint_kib"][pattern] = rec["maxrss_kib"]
        ctx["checksum"][pattern] = rec["checksum"]
        print(f"calibration {pattern}: native peak RSS {rec['maxrss_kib'] // 1024} MiB, "
              f"checksum {rec['checksum']}", flush=True)
    pattern, fits = ctx["patterns"][0], LEVEL_CONFIGS["fits"]
    run_once(ctx, fits, pattern, local_mem_for(fits, ctx["footprint_kib"][pattern]), "warmup")


def measure(ctx, cfg, pattern, run):
    local_mem = None if cfg.native else local_mem_for(cfg, ctx["footprint_kib"][pattern])
    tag = f"{pattern}-{cfg.name.replace(' ', '_').replace('%', 'pct')}-{run}"
    try:
        rec = run_once(ctx, cfg, pattern, local_mem, tag)
    except (RuntimeError, OSError, ValueError) as e:
        ctx["errors"].append({"pattern": pattern, "config": cfg.name, "run": run, "error": str(e)})
        print(f"  run {run} {pattern:6s} {cfg.name:16s} FAILED: {e}", file=sys.stderr, flush=True)
        return
    if rec["checksum"] != ctx["checksum"][pattern]:
        ctx["errors"].append({"pattern": pattern, "config": cfg.name, "run": run, "checksum_mismatch": True,
                              "error": f"CHECKSUM MISMATCH: {rec['checksum']} != native "
                                       f"{ctx['checksum'][pattern]} (memory corrupted under comex)"})
        print(f"  run {run} {pattern:6s} {cfg.name:16s} CHECKSUM MISMATCH {rec['checksum']} != "
              f"{ctx['checksum'][pattern]}", file=sys.stderr, flush=True)
        return
    rec["run"] = run
    ctx["samples"].setdefault((pattern, cfg.name), []).append(rec)
    st = rec.get("stats", {})
    print(f"  run {run} {pattern:6s} {cfg.name:16s} total {rec['total_s']:8.3f} s  access {rec['access_s']:8.3f} s"
          f"  wall {rec['wall_s']:7.2f} s  remote faults {st.get('faults_remote', 0):7d}  faults seen "
          f"{rec['faults_seen'] or 0:7d} median {fus(rec['fault_median_us'])} µs", flush=True)


def measure_all(ctx, runs):
    order = [(p, c) for p in ctx["patterns"] for c in ctx["configs"]]
    for run in range(runs):
        measure_floor(ctx, run)
        for pattern, cfg in (order[::-1] if run % 2 else order):
            measure(ctx, cfg, pattern, run)


# ------------------------------------------------------------------ analysis

def ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


def fault_latencies(recs):
    """Per class: median over runs of the per-run mean handler-side µs, and
    the median count."""
    out = {}
    for label, ns, count in FAULT_CLASSES:
        per_run = [r["stats"][ns] / r["stats"][count] / 1000 for r in recs if r["stats"].get(count)]
        out[count] = {"label": label, "us": round(statistics.median(per_run), 2) if per_run else None,
                      "count": int(statistics.median(r["stats"].get(count, 0) for r in recs))}
    return out


def median_of(recs, key, digits=3):
    vals = [r[key] for r in recs if r.get(key) is not None]
    return round(statistics.median(vals), digits) if vals else None


def faults_seen(recs, floor_us):
    """The program's view: touches slower than FAULT_NS, median over runs of
    their count, median, p99 and total; the median against the floor (None
    for native runs: their slow touches are cache and TLB misses or
    preemption, not page faults)."""
    out = {"count": median_of(recs, "faults_seen", 0), "median_us": median_of(recs, "fault_median_us"),
           "p99_us": median_of(recs, "fault_p99_us"), "total_s": median_of(recs, "fault_total_s", 4),
           "median_us_per_run": [r.get("fault_median_us") for r in recs]}
    out["count"] = int(out["count"]) if out["count"] is not None else None
    out["floor_ratio"] = ratio(out["median_us"], floor_us)
    out["meets_target"] = out["floor_ratio"] <= FLOOR_TARGET if out["floor_ratio"] is not None else None
    return out


def comex_fields(res, recs, nat):
    res["faults"] = fault_latencies(recs)
    keys = ("faults_wp", "pages_prefetch_mapped", "pages_evicted", "pages_written", "pages_dropped_clean",
            "pages_dropped_zero", "pages_zero_populated", "remote_reads", "remote_writes", "bytes_read", "bytes_written",
            "resident_peak_bytes", "local_mem_bytes", "rbuf_bytes", "wbuf_bytes", "budget_overshoots")
    res["counters"] = {k: int(statistics.median(r["stats"].get(k, 0) for r in recs)) for k in keys}
    c = res["counters"]
    res["pages_per_remote_read"] = round(c["bytes_read"] / PAGE / c["remote_reads"], 2) if c["remote_reads"] else None
    n_faults = sum(int(statistics.median(r["stats"].get(k, 0) for r in recs)) for k in ACCESS_FAULTS)
    extra = res["access_s"]["median"] - nat.get("access_s", 0)
    res["access_faults"] = n_faults
    res["observed_us_per_access_fault"] = round(extra / n_faults * 1e6, 1) if n_faults and nat else None


def aggregate(samples, patterns, configs, floor_us):
    """One result per (pattern, configuration), with slowdowns against the
    native result of the same pattern (ratio of medians, and the median of
    per-run ratios, runs with the same index being close in time)."""
    results = []
    for pattern in patterns:
        native = samples.get((pattern, "native"))
        nat = {k: statistics.median(r[k] for r in native) for k in ("total_s", "access_s", "wall_s", "fill_s")} \
            if native else {}
        nat_by_run = {r["run"]: r for r in native or []}
        for cfg in configs:
            recs = samples.get((pattern, cfg.name))
            if not recs:
                continue
            res = {"pattern": pattern, "config": cfg.name, "group": cfg.group, "level": cfg.level,
                   "policy": None if cfg.native else cfg.policy, "handler_spin": None if cfg.native else cfg.spin,
                   "local_mem": recs[0].get("local_mem"), "runs": recs}
            for k in ("fill_s", "access_s", "total_s", "wall_s", "cpu_s", "ns_per_page"):
                res[k] = summary([r[k] for r in recs])
            res["slowdown"] = {k: ratio(res[k]["median"], nat.get(k)) for k in ("total_s", "access_s", "wall_s", "fill_s")}
            per_run = [r["total_s"] / nat_by_run[r["run"]]["total_s"] for r in recs if r["run"] in nat_by_run]
            res["slowdown"]["total_s_per_run"] = [round(x, 3) for x in per_run]
            res["faults_seen"] = faults_seen(recs, None if cfg.native else floor_us)
            if not cfg.native:
                comex_fields(res, recs, nat)
                if not res["faults"]["faults_remote"]["count"]:  # slow touches without remote faults: noise
                    res["faults_seen"].update(floor_ratio=None, meets_target=None)
            results.append(res)
    return results


def find(results, pattern, config):
    return next((r for r in results if r["pattern"] == pattern and r["config"] == config), None)


def warnings_for(results, errors, quick, floor):
    w = []
    for r in results:
        for k in ("total_s", "access_s"):
            if r[k]["spread"] > SPREAD_LIMIT:
                w.append(f"{r['pattern']} {r['config']}: {k} spread across runs {r[k]['spread'] * 100:.0f} % "
                         f"> {SPREAD_LIMIT * 100:.0f} % ({r[k]['min']:.3f}–{r[k]['max']:.3f} s)")
        if r["config"] == "fits" and r["counters"]["pages_evicted"]:
            w.append(f"{r['pattern']} fits: {r['counters']['pages_evicted']} pages were evicted; "
                     f"the 'fits' budget did not hold everything")
    if floor["floor_us"] is None:
        w.append("the floor could not be measured (see errors); no fault latency is compared with it")
    elif floor["shm_read"]["memnode_polled"] != "all":
        w.append(f"the floor's memnode did not busy-poll in every run ({floor['shm_read']['memnode_polled']}): "
                 f"another memnode held the polling core, and the shm read is that of a sleeping memnode "
                 f"(--private-shm avoids other users' claims)")
    if any(e.get("checksum_mismatch") for e in errors):
        w.append("CHECKSUM MISMATCH: comex returned different memory contents than the native run")
    return w + benchlib.closing_warnings(errors, "run(s)",
                                         quick and "tiny footprint and one run, not meaningful numbers")


# ------------------------------------------------------------------ docs

def f3(x):
    return "n/a" if x is None else f"{x:.3f}"


def fx(x):
    if x is None:
        return "n/a"
    return f"{x:.2f}x" if x < 10 else f"{x:.0f}x" if x >= 100 else f"{x:.1f}x"


def fus(x):
    return "–" if x is None else f"{x:.1f}" if x < 1000 else f"{x:.0f}"


def mib(b):
    return f"{b / 2**20:.0f}"


def warn_mark(s):
    return " ⚠" if s["spread"] > SPREAD_LIMIT else ""


def sec(s):
    return f"{s['median']:.3f} ({s['min']:.3f}–{s['max']:.3f}){warn_mark(s)}"


def level_table(results, pattern):
    rows = ["| config | local-mem MiB | total s (min–max) | slowdown | access s (min–max) | slowdown | ns/page touched "
            "| wall s | CPU s | remote faults | MiB read | MiB written |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        if r["pattern"] != pattern or r["group"] != "level":
            continue
        c = r.get("counters", {})
        lm = mib(c["local_mem_bytes"]) if c else "–"
        rows.append(f"| {r['config']} | {lm} | {sec(r['total_s'])} | {fx(r['slowdown']['total_s'])} | "
                    f"{sec(r['fill_s'])} | {sec(r['access_s'])} | {fx(r['slowdown']['access_s'])} | {r['ns_per_page']['median']:.0f} | "
                    f"{r['wall_s']['median']:.2f} | {r['cpu_s']['median']:.1f} | "
                    f"{r['faults']['faults_remote']['count'] if c else '–'} | "
                    f"{mib(c['bytes_read']) if c else '–'} | {mib(c['bytes_written']) if c else '–'} |")
    return "\n".join(rows)


def variant_table(results, group, base_names):
    rows = ["| pattern | config | fill s | access s (min–max) | slowdown | remote faults | pages/remote read | "
            "pages evicted | dropped clean | MiB read | µs/remote fault (handler) | µs/fault (program) | CPU s |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        if r["config"] not in base_names and r["group"] != group:
            continue
        if r["group"] not in ("level", group) or r["config"] in ("native", "fits", "100%") or "counters" not in r:
            continue
        c = r["counters"]
        rows.append(f"| {r['pattern']} | {r['config']}{'' if r['group'] == group else ' (clock, spin 50us)'} | "
                    f"{sec(r['fill_s'])} | {sec(r['access_s'])} | {fx(r['slowdown']['access_s'])} | {r['faults']['faults_remote']['count']} | "
                    f"{r['pages_per_remote_read'] or '–'} | {c['pages_evicted']} | {c['pages_dropped_clean']} | "
                    f"{mib(c['bytes_read'])} | {fus(r['faults']['faults_remote']['us'])} | "
                    f"{fus(r['observed_us_per_access_fault'])} | {r['cpu_s']['median']:.1f} |")
    return "\n".join(rows)


# Per variant group: its section title and the levels it is compared at.
VARIANT_SECTIONS = {
    "policy": ("Eviction policy: clock vs fifo", ("50%", "25%")),
    "spin": ("Fault handler spin: 0 / 50 µs / 200 µs", ("25%",)),
    "writebehind": ("Write-behind on (default) / off (D27)", ("50%", "25%")),
    "reclaimer": ("Reclaimer thread off (default) / on (D31)", ("50%", "25%")),
    "yield": ("Spinning handler yields (default) / pauses (D33)", ("50%", "25%")),
    "pool": ("Embedded pool fixed (populated at start) / growing with the program (D11)", ("50%", "25%")),
    "busy": ("Beside one CPU-bound neighbour at normal priority (issue 21; D36)", ("50%", "25%")),
}


def variant_sections(results):
    groups = {r["group"] for r in results}
    return "\n".join(f"## {title}\n\n{variant_table(results, g, levels)}\n"
                     for g, (title, levels) in VARIANT_SECTIONS.items() if g in groups)


def busy_table(results):
    """issue 21: the program's own view of its faults, quiet and busy, next
    to the floor (the floor is measured quiet)."""
    rows = ["| pattern | config | access s | slowdown (against quiet native) | faults seen | p50 µs | p99 µs |",
            "|---|---|---:|---:|---:|---:|---:|"]
    for r in results:
        if r["group"] != "busy" and r["config"] not in ("native", "50%", "25%"):
            continue
        f = r["faults_seen"]
        rows.append(f"| {r['pattern']} | {r['config']} | {sec(r['access_s'])} | {fx(r['slowdown']['access_s'])} | "
                    f"{f['count'] if f['count'] is not None else '–'} | {fus(f['median_us'])} | {fus(f['p99_us'])} |")
    return "\n".join(rows)


def latency_table(results):
    head = " | ".join(f"{label} µs (n)" for label, _, _ in FAULT_CLASSES)
    rows = [f"| pattern | config | {head} | µs per access-phase fault seen by the program |",
            "|---|---|" + "---:|" * (len(FAULT_CLASSES) + 1)]
    for r in results:
        if "faults" not in r:
            continue
        cells = " | ".join(f"{fus(r['faults'][cnt]['us'])} ({r['faults'][cnt]['count']})" for _, _, cnt in FAULT_CLASSES)
        rows.append(f"| {r['pattern']} | {r['config']} | {cells} | {fus(r['observed_us_per_access_fault'])} |")
    return "\n".join(rows)


FLOOR_ROWS = [
    ("same_core", "userfaultfd round trip, handler on the faulting CPU, blocking in poll(), UFFDIO_COPY 4 KiB"),
    ("cross_core_spin", "the same, handler on the other CPU busy-polling a non-blocking uffd"),
    ("cross_core_block", "the same, handler on the other CPU blocking in poll()"),
    ("kernel_minor", "no userfaultfd: first write to a fresh anonymous page"),
    ("kernel_zero_read", "no userfaultfd: first read of a fresh anonymous page (zero page)"),
    ("zero_window", "first touch, comex's way for scattered touches: `same_core` answering with the zero page over "
     "512 pages; each first write then a kernel fault off the zero page"),
    ("populate_window", "first touch, comex's way for a stream of first touches (D29): `same_core` answering with "
     "512 zeroed pages in one UFFDIO_COPY; no fault on the writes that follow"),
    ("sigbus", "UFFD_FEATURE_SIGBUS: no handler thread, the faulting thread's SIGBUS handler answers with "
     "UFFDIO_COPY 4 KiB (the delivery issue 9 item 2(b) proposes; D35)"),
]


def floor_table(floor):
    rows = ["| component | median µs | p99 µs | mean µs | runs |", "|---|---:|---:|---:|---:|"]
    for key, label in FLOOR_ROWS:
        u = floor["uffd"].get(key)
        if u:
            rows.append(f"| `{key}`: {label} | {u['median_us']:.2f} | {u['p99_us']:.2f} | "
                        f"{u['mean_us']:.2f} | {u['runs']} |")
    r = floor["shm_read"]
    if r:
        rows.append(f"| 4 KiB read over UCX shared memory from a polling memnode (transport_bench, "
                    f"`{FLOOR_CONFIG}`; the memnode polled in {r['memnode_polled']} runs) | "
                    f"{r['median_us']:.2f} | {r['p99_us']:.2f} | – | {r['runs']} |")
    if floor["floor_us"] is not None:
        rows.append(f"| **floor = `same_core` + 4 KiB shm read** | **{floor['floor_us']:.2f}** | "
                    f"{floor['floor_p99_us']:.2f} | | |")
    return "\n".join(rows)


def fault_floor_table(results, floor):
    target = f"{FLOOR_TARGET:g}x"
    rows = [f"| pattern | config | faults seen | median µs | p99 µs | s in faults | access s | median / floor "
            f"| ≤ {target} | remote faults | µs/remote fault (handler) |", "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in results:
        fs, rf = r["faults_seen"], r.get("faults", {}).get("faults_remote", {})
        ok = "–" if fs["meets_target"] is None else "yes" if fs["meets_target"] else "no"
        rows.append(f"| {r['pattern']} | {r['config']} | {fs['count'] if fs['count'] is not None else '–'} | "
                    f"{fus(fs['median_us'])} | {fus(fs['p99_us'])} | {f3(fs['total_s'])} | "
                    f"{r['access_s']['median']:.3f} | {fx(fs['floor_ratio'])} | {ok} | "
                    f"{rf.get('count', '–')} | {fus(rf.get('us'))} |")
    return "\n".join(rows)


def headline(results, patterns, floor):
    s = []
    if floor["floor_us"] is not None:
        s.append(f"**Floor**: {floor['floor_us']:.1f} µs per remote fault = userfaultfd round trip on one core "
                 f"{floor['uffd']['same_core']['median_us']:.1f} µs + 4 KiB shared-memory read "
                 f"{floor['shm_read']['median_us']:.1f} µs (target: a remote fault within {FLOOR_TARGET:g}x, "
                 f"{floor['floor_us'] * FLOOR_TARGET:.1f} µs).")
    for p in patterns:
        n = find(results, p, "native")
        fits = find(results, p, "fits")
        if fits and n:
            tax = fits["slowdown"]["total_s"]
            verdict = "meets" if tax is not None and tax <= 1.05 else "misses"
            s.append(f"**{p}, everything fits**: {fits['total_s']['median']:.3f} s vs native "
                     f"{n['total_s']['median']:.3f} s in the program (fill + access), **{fx(tax)}** — {verdict} "
                     f"the ≤ 5 % target (per-run ratios {', '.join(f'{x:.2f}' for x in fits['slowdown']['total_s_per_run'])}); "
                     f"wall clock including `comex run` start-up {fx(fits['slowdown']['wall_s'])}.")
        for lvl in ("100%", "50%", "25%"):
            r = find(results, p, lvl)
            if r and n:
                fs = r["faults_seen"]
                s.append(f"{p} at {lvl}: total {fx(r['slowdown']['total_s'])}, access phase {fx(r['slowdown']['access_s'])} "
                         f"({r['ns_per_page']['median'] / 1000:.1f} µs per page touched vs "
                         f"{n['ns_per_page']['median']:.0f} ns natively); {fs['count']} faults seen by the program, "
                         f"median **{fus(fs['median_us'])} µs** (p99 {fus(fs['p99_us'])}) = "
                         f"**{fx(fs['floor_ratio'])} the floor**.")
    return "\n".join(f"- {x}" for x in s)


def analysis(doc):
    """Sentences derived from the numbers, so that they stay true when the
    page is regenerated from another run."""
    res, s = doc["results"], []
    for p in doc["options"]["patterns"]:
        fits, n = find(res, p, "fits"), find(res, p, "native")
        if fits and n:
            zf = fits["faults"]["faults_zero"]
            zero_ms = zf["us"] * zf["count"] / 1000 if zf["us"] else 0
            pop = fits["counters"].get("pages_zero_populated", 0)
            s.append(f"{p}, fits: the only userfaultfd work is first touch — {zf['count']} zero-fill faults "
                     f"(up to 512 pages each while the budget has room) at {fus(zf['us'])} µs "
                     f"handler-side, {zero_ms:.0f} ms in all, which populated {pop} pages (a stream of first "
                     f"touches, D29: the writes that follow take no fault) and mapped the zero page over the "
                     f"rest (each first write then an ordinary kernel fault). The fill phase goes from "
                     f"{n['fill_s']['median']:.3f} s to "
                     f"{fits['fill_s']['median']:.3f} s, the access phase (no faults) from "
                     f"{n['access_s']['median'] * 1000:.1f} ms to {fits['access_s']['median'] * 1000:.1f} ms.")
        r25 = find(res, p, "25%")
        if r25:
            rf = r25["faults"]["faults_remote"]
            ev = r25["faults"]["pages_evicted"]
            c = r25["counters"]
            fs = r25["faults_seen"]
            remote_s = (rf["us"] or 0) * rf["count"] / 1e6
            s.append(f"{p} at 25 %: {rf['count']} remote faults at {fus(rf['us'])} µs each handler-side "
                     f"(including any eviction they had to do first) ≈ {remote_s:.1f} s of the "
                     f"{r25['access_s']['median']:.1f} s access phase; a remote read brings "
                     f"{r25['pages_per_remote_read'] or 0:.1f} pages on average (adaptive prefetch, up to 64). "
                     f"Eviction costs {fus(ev['us'])} µs per page; {c['pages_dropped_clean']} of "
                     f"{c['pages_evicted']} evicted pages were dropped clean (no rewrite). The program "
                     f"timed {fs['count']} touches over {FAULT_NS / 1000:g} µs, {f3(fs['total_s'])} s in all, "
                     f"median {fus(fs['median_us'])} µs: the handler-side time plus the userfaultfd round trip "
                     f"and wake-ups.")
        a, b = find(res, p, "50%"), find(res, p, "50% fifo")
        c25, d25 = find(res, p, "25%"), find(res, p, "25% fifo")
        pol = [f"{x['config']} clock {x['access_s']['median']:.2f} s vs fifo {y['access_s']['median']:.2f} s"
               for x, y in ((a, b), (c25, d25)) if x and y]
        if pol:
            s.append(f"{p}, clock vs fifo (access phase): " + "; ".join(pol) + ".")
        sp = [find(res, p, k) for k in ("25% spin 0", "25%", "25% spin 200us")]
        if all(sp):
            s.append(f"{p} at 25 %, handler spin 0 / 50 / 200 µs: access "
                     + " / ".join(f"{x['access_s']['median']:.2f}" for x in sp) + " s, remote fault "
                     + " / ".join(fus(x["faults"]["faults_remote"]["us"]) for x in sp) + " µs handler-side, CPU "
                     + " / ".join(f"{x['cpu_s']['median']:.1f}" for x in sp) + " s.")
    s += floor_sentences(doc["floor"])
    s += robustness_sentences(doc)
    return "\n".join(f"- {x}" for x in s)


def floor_sentences(floor):
    u = floor["uffd"]
    if not all(k in u for k in ("same_core", "cross_core_spin", "cross_core_block", "kernel_minor")):
        return []
    return [f"The userfaultfd round trip alone costs {u['same_core']['median_us']:.1f} µs with the handler on the "
            f"faulting core, {u['cross_core_spin']['median_us']:.1f} µs with a busy-polling handler on the other core "
            f"and {u['cross_core_block']['median_us']:.1f} µs with a sleeping one there, against "
            f"{u['kernel_minor']['median_us']:.1f} µs for an ordinary first-touch page fault: on this machine a "
            f"cross-core wake-up, not the copy, dominates the fault path."]


def robustness_sentences(doc):
    """Budget arithmetic, fault-count comparisons (deterministic, unlike the
    times), noise and failures."""
    res, s, o = doc["results"], [], doc["options"]
    for p in o["patterns"]:
        r = find(res, p, "100%")
        if r:
            c = r["counters"]
            s.append(f"{p} at \"100 %\": local-mem {mib(c['local_mem_bytes'])} MiB is the native peak RSS, but the "
                     f"runtime's read and write buffers ({mib(c['rbuf_bytes'] + c['wbuf_bytes'])} MiB) count against it, "
                     f"so the program's pages do not fit: {c['pages_evicted']} pages evicted, "
                     f"{r['faults']['faults_remote']['count']} remote faults.")
        pairs = [(find(res, p, a), find(res, p, b)) for a, b in (("50%", "50% fifo"), ("25%", "25% fifo"))]
        pol = [f"{x['config']}: clock {x['faults']['faults_remote']['count']} vs fifo "
               f"{y['faults']['faults_remote']['count']} remote faults"
               for x, y in pairs if x and y]
        if pol:
            s.append(f"{p}, fault counts (these do not depend on machine load): " + "; ".join(pol) + ".")
    rows = [r for r in res if r["config"] != "native"]
    if rows:
        worst = max(rows, key=lambda r: r["access_s"]["max"] / max(r["access_s"]["min"], 1e-9))
        m = doc["machine"]
        s.append(f"Noise: load average {' '.join(m['loadavg_start'])} at the start, {' '.join(m['loadavg_end'])} at "
                 f"the end on {m['cores']} cores; the access time of one configuration varied up to "
                 f"{worst['access_s']['max'] / max(worst['access_s']['min'], 1e-9):.1f}x between runs "
                 f"({worst['pattern']} {worst['config']}: {worst['access_s']['min']:.2f}–{worst['access_s']['max']:.2f} s) "
                 f"while its fault counts were the same in every run. Where times and fault counts disagree, "
                 f"trust the counts; differences in time between policies or spin settings smaller than the "
                 f"spread are not evidence.")
    if doc["errors"]:
        kinds = sorted({f"{e['pattern']} {e['config']}" for e in doc["errors"]})
        s.append(f"{len(doc['errors'])} run(s) failed ({', '.join(kinds)}); they are left out of the medians "
                 f"(fewer than {o['runs']} runs behind those rows). See Errors.")
    return s


def previous_results(current_path):
    """The newest schema-1 run (256 MiB, untimed touches), summarised: its
    tables still describe the runtime at that commit."""
    for path in sorted(benchlib.RESULTS_DIR.glob(f"{NAME}-*.json"), reverse=True):
        if path == current_path:
            continue
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if doc.get("schema") != "comex-bench-pager/1":
            continue
        o = doc["options"]
        tables = "\n\n".join(f"#### {p}\n\n{level_table(doc['results'], p)}" for p in o["patterns"])
        return f"""## Previous results (schema 1)

From {rel(path)}: git {doc['git']['rev'][:12]}, {o['size_mib']} MiB, {o['passes']} passes,
{o['write_pct']} % writes, {o['runs']} runs, run {doc['timestamp']}. Touches were not timed then
(no per-fault latency, and its ns/page is not comparable with the timed runs above);
the policy and spin variants are in that JSON.

{tables}
"""
    return ""


def rel(path):
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def warm_text(o):
    if not o.get("warm_mib"):
        return ""
    return (f"Before every run, native or not, {o['warm_mib']} MiB were touched and freed (`--no-warm` skips it): "
            "this VM reports free pages to its hypervisor (virtio-balloon free page reporting), and a first "
            "touch of a reported page costs a hypervisor fault, which made a native 1 GiB fill take 0.6-1.9 s "
            "from run to run (0.59-0.65 s after the warm-up).\n")


def comex_flags_text(o):
    extra = o.get("comex_flags") or []
    return ("; and, from the command line, " + " ".join(f"`{f}`" for f in extra)) if extra else ""


def private_shm_text(o):
    if o.get("private_shm"):
        return ("This run had a private /dev/shm (`--private-shm`): no memnode of another user could hold "
                "the polling-core claim, so its memnodes, the embedded ones included, could claim it and "
                "busy-poll (on core 1 of 2, next to the program and the fault handler).\n")
    return ("Memnodes claim the polling core through a claim file in /dev/shm; one of another user may hold it, "
            "and then ours sleep between requests (see Warnings; `--private-shm` avoids this).\n")


def render_docs(doc, json_path, out_path=DOCS_PATH):
    m, o, fl = doc["machine"], doc["options"], doc["floor"]
    warnings = "\n".join(f"- {w}" for w in doc["warnings"]) or "- none"
    errors = "\n".join(f"- {e['pattern']} {e['config']} run {e['run']}:\n\n      "
                       + e["error"].replace("\n", "\n      ") + "\n" for e in doc["errors"]) or "- none"
    tables = "\n\n".join(f"### {p}\n\n{level_table(doc['results'], p)}" for p in o["patterns"])
    text = f"""# Pager benchmark

<!-- Generated by bench/pager.py from {rel(json_path)}; do not edit by hand. -->

What does `comex run` cost an unmodified program: nothing much when its memory
fits in the budget (issue target: ≤ 5 % overhead), and how much when only
50 % or 25 % of its footprint may stay local? How long does one remote fault
take as the program sees it, against the floor of this machine (a userfaultfd
round trip plus a 4 KiB read over shared memory; target: within {FLOOR_TARGET:g}x)?

## What is measured

`bench/pager_bench --pattern seq|rand|stride --size-mib {o['size_mib']} --passes {o['passes']} --write-pct {o['write_pct']} --seed {o['seed']} --time-touches 1`
mallocs {o['size_mib']} MiB, fills every word (the first touch of every page: *fill*), then makes
{o['passes']} passes touching each 4 KiB page once (*access*): in address order (`seq`), in
a fresh random permutation per pass (`rand`) or in {o.get('stride', STRIDE)}-page strides (`stride`: pages
0, {o.get('stride', STRIDE)}, {2 * o.get('stride', STRIDE)}, …, then 1, {o.get('stride', STRIDE) + 1}, …), reading one word and writing one
in {o['write_pct']} % of the pages. It prints a checksum of everything read, which must equal
the native run's (it did in every run reported here, or the run is listed under Errors).
Every access-phase touch is timed (`clock_gettime` before and after, also natively,
which adds ~50 ns per touch to *access*); touches slower than {o.get('fault_ns', FAULT_NS) / 1000:g} µs are the
*faults seen* by the program, reported with their median and p99 (median of the per-run values):
remote reads, but also write-protect faults and read- or write-buffer hits, as the
program cannot tell them apart (natively, and in *fits*, they are cache misses and
preemptions; no ratio to the floor is given where there were no remote faults).
*total* = fill + access as timed inside the program (`CLOCK_MONOTONIC`); *wall*
also counts process start, `comex run`'s embedded memnode start-up (a
{o.get('embedded_pool_mib', MIN_EMBEDDED_POOL_MIB)} MiB pool, populated and locked) and exit. Slowdown = comex median / native median.
{warm_text(o)}
Budgets: `local-mem` is a share of the native run's peak RSS
({", ".join(f"{p} {k // 1024} MiB" for p, k in o['footprint_kib'].items())}), and as for every `comex run` it
includes the runtime's own buffers (with adaptive prefetch a 64-page landing area instead of the {RBUF_PAGES}-page read buffer, write
buffer {WBUF_PAGES} pages, shrunk at small budgets). *fits* adds those buffers plus
{FITS_SLACK_KIB // 1024} MiB: nothing is evicted. Every comex run passes `--local-mem`, `--evict-policy`,
`--handler-spin`, `--embedded-pool` explicitly{comex_flags_text(o)}; all other
options are defaults (docs/OPTIONS.md).

The floor is measured in every run, before the workloads: `bench/uffd_floor`
({FLOOR_UFFD_ITERS} faults per mode on fresh pages; timed by the faulting thread) and
`bench/transport_bench comex --size 4096` against a polling `comex memnode --shm true`
(bench/transport.py's `{FLOOR_CONFIG}` row, {o.get('floor_shm_iters', FLOOR_SHM_ITERS)} reads; runs in which the memnode
could not claim the polling core and slept are left out when any run polled). Floor =
same-core userfaultfd round trip + 4 KiB shm read, the least a remote fault
can cost with this kernel, this transport and a handler that answers at once.
{private_shm_text(o)}
Each configuration ran {o['runs']} times, runs interleaved (order reversed on odd
runs); numbers are medians with min–max across runs; ⚠ marks a spread above
{SPREAD_LIMIT * 100:.0f} %. Handler-side latencies come from the runtime's `--stats-json`
counters (`ns_*` / count; a fault's time includes evictions it triggered).

## Machine

{m['cpu_model']}, {m['cores']} cores{' (VM)' if m['hypervisor'] else ''}, kernel {m['kernel']},
THP {m['thp_enabled']}, UCX {m['ucx']['version']}, git {doc['git']['rev'][:12]}{' (dirty tree)' if doc['git']['dirty'] else ''},
run {doc['timestamp']} ({o['duration_s'] / 60:.0f} min); load average {' '.join(m['loadavg_start'])} before,
{' '.join(m['loadavg_end'])} after; other load on the CPUs {m['background_cpu_busy_start'] * 100:.0f} % before,
{m['background_cpu_busy_end'] * 100:.0f} % after; hypervisor steal {pct(m.get('cpu_steal_during_run'))}.

## Headline

{headline(doc['results'], o['patterns'], fl)}

## Floor

{floor_table(fl)}

## Faults as the program sees them, against the floor

{fault_floor_table(doc['results'], fl)}

## Slowdown by local memory (clock, handler spin 50 µs)

{tables}

{variant_sections(doc['results'])}
{"## Fault latency as the program sees it, quiet and busy" + chr(10) + chr(10) + busy_table(doc['results']) + chr(10) if any(r['group'] == 'busy' for r in doc['results']) else ""}
## Per-fault latency, handler-side (µs, median over runs; n = faults or pages per run)

{latency_table(doc['results'])}

## Where the time goes

{analysis(doc)}
{NOTES}
## Warnings

{warnings}

## Errors

{errors}

Reproduce: `make build && python3 bench/pager.py` (about {o['duration_s'] / 60:.0f} minutes; `--quick` for a
smoke run, `--render-only` to regenerate this page from the newest JSON;
`--comex-flag=--prefetch=32` and the like to try an option).

{previous_results(Path(json_path).resolve())}"""
    Path(out_path).write_text(text.rstrip() + "\n")


# Observations that the numbers above support but that the generator cannot
# derive; kept short and re-checked whenever the page is regenerated.
NOTES = """
Design observations behind these numbers (src/rt/fault.c, reclaim.c,
prefetch.c; decisions D19-D33 in docs/DECISIONS.md):

- A remote fault fetches what the adaptive prefetcher plans (a window that
  doubles up to 64 pages while a sequential, backward or strided stream
  continues; one page for scattered faults), one read per run of consecutive
  frames. `keep-frames` rewrites a written page into its own frame, so a
  sequential scan's plan is one read; a strided plan is one read per page.
- Random access costs one 4 KiB read and one userfaultfd round trip per
  fault: the program-side median is at the floor. Sequential faults are
  fewer but each maps up to 64 pages (UFFDIO_COPY allocates and copies each,
  about 1.2 us) and first evicts as many (about 2-3.5 us per page:
  PAGEMAP_SCAN, UFFDIO_MOVE, hash, write-buffer copy and the write itself).
- A cyclic scan over more than the budget misses on every page under FIFO and
  under CLOCK alike (both evict the page that will be needed soonest); only
  prefetch reduces the number of faults.
- The floor's same-core mode is the cheapest userfaultfd round trip on this
  VM: a cross-core wake-up of a sleeping CPU costs more than the whole copy.
  Program, fault handler and embedded memnode (busy-polling after each
  request) compete for two cores.
"""


# ------------------------------------------------------------------ main

def csv_choice(text, allowed, what, threads_ok=False):
    items = [x.strip().rstrip("%") for x in text.split(",") if x.strip()]
    ok = (lambda x: re.fullmatch(rf"({'|'.join(allowed)})(-t([1-9]|[1-5][0-9]|6[0-4]))?", x)) if threads_ok else \
        (lambda x: x in allowed)
    bad = [x for x in items if not ok(x)]
    if bad:
        sys.exit(f"pager.py: {what} takes a comma-separated subset of {','.join(allowed)} (not {','.join(bad)})")
    return items


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="build directory holding comex, pager_bench, uffd_floor, "
                                                     "transport_bench")
    ap.add_argument("--runs", type=int, help=f"runs per configuration (default {DEFAULTS['runs']}; >= 3 for real numbers)")
    ap.add_argument("--size-mib", type=int, help=f"workload footprint (default {DEFAULTS['size_mib']})")
    ap.add_argument("--passes", type=int, help=f"access passes (default {DEFAULTS['passes']})")
    ap.add_argument("--write-pct", type=int, help=f"share of touches that write (default {DEFAULTS['write_pct']})")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--patterns", default=",".join(PATTERNS),
                    help=f"comma-separated subset of {','.join(PATTERNS)}; a suffix -tT (e.g. rand-t4) runs "
                         "the access passes with T threads (pager_bench --threads)")
    ap.add_argument("--levels", default=",".join(DEFAULT_LEVELS),
                    help=f"comex budgets, comma-separated subset of {','.join(LEVELS)} (native always runs)")
    ap.add_argument("--variants", default="", help=f"also run the variant groups: {','.join(VARIANTS)}")
    ap.add_argument("--comex-flag", action="append", default=[], metavar="FLAG",
                    help="extra flag for every `comex run`, after the benchmark's own (the last one wins), "
                         "e.g. --comex-flag=--prefetch=32; repeatable")
    ap.add_argument("--poll-wait", type=float, default=FLOOR_POLL_WAIT_S, metavar="SECONDS",
                    help="how long the floor's polling memnode may wait for the polling core to be free")
    ap.add_argument("--private-shm", action="store_true",
                    help="run in a mount namespace with a private /dev/shm (root), so that memnodes of other "
                         "users cannot hold the polling-core claim (as bench/transport.py --private-shm)")
    ap.add_argument("--out-dir", help="write the JSON and the page there instead of bench/results and docs/")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 16 MiB, one pass, one run, --poll-wait 0; JSON and page are made in a "
                         "temporary directory and removed (kept with --out-dir)")
    ap.add_argument("--no-warm", action="store_true",
                    help="no warm-up of guest memory before each run (harness/sysenv.py warm_guest_memory)")
    ap.add_argument("--render-only", action="store_true", help="only regenerate docs/PAGER-BENCH.md")
    args = ap.parse_args(argv)
    args.patterns = csv_choice(args.patterns, PATTERNS, "--patterns", threads_ok=True)
    args.levels = csv_choice(args.levels, LEVELS, "--levels")
    args.variants = csv_choice(args.variants, VARIANTS, "--variants")
    if not args.patterns:
        sys.exit("pager.py: --patterns is empty")
    if args.quick:
        args.poll_wait = 0   # the floor's memnode takes the polling core as it finds it
    bad = [f for f in args.comex_flag if not f.startswith("--")]
    if bad:
        sys.exit(f"pager.py: --comex-flag takes comex options like --comex-flag=--prefetch=32 (not {' '.join(bad)})")
    return args


def binaries(build):
    build = Path(build) if Path(build).is_absolute() else ROOT / build
    names = ("comex", "pager_bench", "uffd_floor", "transport_bench", "libcomex-rt.so")
    for b in names:
        if not os.path.exists(build / b):
            sys.exit(f"pager.py: {build / b} not found; build first (make build)")
    return {n: str(build / n) for n in names}


def render_only():
    path = benchlib.newest_json(NAME)
    doc = json.loads(path.read_text()) if path else None
    if not doc or doc.get("schema") != SCHEMA:
        sys.exit(f"pager.py: no bench/results/{NAME}-*.json with schema {SCHEMA} yet")
    render_docs(doc, path)
    print(f"wrote {DOCS_PATH}")
    return 0


def output_paths(args, stamp, scratch):
    """(JSON path, page path) for this run: in --out-dir, or for --quick in
    SCRATCH (removed afterwards: a smoke run leaves bench/results and docs/
    alone), else bench/results and docs/PAGER-BENCH.md."""
    if args.out_dir or args.quick:
        out = Path(args.out_dir or scratch)
        return out / f"{NAME}-{stamp}.json", out / "PAGER-BENCH.md"
    return benchlib.RESULTS_DIR / f"{NAME}-{stamp}.json", DOCS_PATH


def main(argv):
    args = parse_args(argv)
    if args.private_shm and not os.environ.get(transport.PRIVATE_SHM_MARK):
        transport.reexec_private_shm(argv, __file__)
    if args.render_only:
        return render_only()
    bins = binaries(args.build)
    base = QUICK if args.quick else DEFAULTS
    w = {k: getattr(args, k) if getattr(args, k) is not None else base[k]
         for k in ("size_mib", "passes", "write_pct", "seed")}
    runs = args.runs or base["runs"]
    configs = configs_for(args.levels, args.variants)
    started = time.monotonic()
    doc, times0 = benchlib.start_doc(SCHEMA)   # its git revision now: others may commit while the run goes on
    sysenv.install_signal_handlers()
    tmp = tempfile.mkdtemp(prefix="comex-pager-bench-")
    ctx = {"comex": bins["comex"], "bench": bins["pager_bench"], "uffd_floor": bins["uffd_floor"],
           "transport_bench": bins["transport_bench"], "tmp": tmp, "workload": w, "patterns": args.patterns,
           "configs": configs, "comex_flags": args.comex_flag,
           "floor_shm_iters": QUICK_FLOOR_SHM_ITERS if args.quick else FLOOR_SHM_ITERS,
           "poll_wait_s": args.poll_wait, "warm": not args.no_warm and sysenv.free_page_reporting(),
           "footprint_kib": {}, "checksum": {}, "samples": {}, "errors": [], "floor": []}
    try:
        ctx["token"] = transport.make_token(bins["comex"], tmp)
        calibrate(ctx)
        measure_all(ctx, runs)
    finally:
        sysenv.UNDO.run_all()
        if not os.environ.get("PAGER_BENCH_KEEP_TMP"):
            subprocess.run(["rm", "-rf", tmp])
    floor = floor_summary(ctx["floor"])
    results = aggregate(ctx["samples"], args.patterns, configs, floor["floor_us"])
    doc.update({
        "options": dict(w, runs=runs, quick=args.quick, patterns=args.patterns, levels=args.levels,
                        variants=args.variants, comex_flags=args.comex_flag, stride=STRIDE, fault_ns=FAULT_NS,
                        footprint_kib=ctx["footprint_kib"], native_checksum=ctx["checksum"],
                        build=str(Path(bins["comex"]).parent), fits_slack_kib=FITS_SLACK_KIB,
                        rbuf_pages=RBUF_PAGES, wbuf_pages=WBUF_PAGES, zero_fill_window=64,
                        embedded_pool_mib=embedded_pool_mib(w), warm_mib=ctx["warm"] and
                        (w["size_mib"] + embedded_pool_mib(w)),
                        floor_uffd_iters=FLOOR_UFFD_ITERS, floor_shm_iters=ctx["floor_shm_iters"],
                        run_timeout_s=run_timeout(w), poll_wait_s=args.poll_wait,
                        private_shm=bool(os.environ.get(transport.PRIVATE_SHM_MARK)),
                        environment="COMEX_* and UCX_* removed",
                        duration_s=round(time.monotonic() - started, 1)),
        "configs": [c.describe() for c in configs],
        "floor": floor,
        "floor_runs": ctx["floor"],
        "results": results,
        "errors": ctx["errors"],
    })
    with tempfile.TemporaryDirectory(prefix="comex-pager-quick-") as scratch:
        json_path, page_path = output_paths(args, doc["timestamp"], scratch)
        benchlib.finish_doc(doc, times0, NAME, path=json_path,
                            warnings=warnings_for(results, ctx["errors"], args.quick, floor))
        render_docs(doc, json_path, page_path)
        print(f"wrote {page_path} in {doc['options']['duration_s']} s")
    print_summary(doc)
    for x in doc["warnings"]:
        print(f"warning: {x}", file=sys.stderr)
    return 1 if ctx["errors"] else 0


def print_summary(doc):
    fl = doc["floor"]
    if fl["floor_us"] is not None:
        print(f"floor {fl['floor_us']:.1f} us = uffd same-core {fl['uffd']['same_core']['median_us']:.1f} "
              f"+ shm 4 KiB read {fl['shm_read']['median_us']:.1f}")
    for r in doc["results"]:
        fs = r["faults_seen"]
        print(f"  {r['pattern']:6s} {r['config']:16s} total {r['total_s']['median']:8.3f} s "
              f"({fx(r['slowdown']['total_s'])})  faults seen {fs['count']}  median {fus(fs['median_us'])} us  "
              f"p99 {fus(fs['p99_us'])} us  = {fx(fs['floor_ratio'])} floor")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
