#!/usr/bin/env python3
"""Pager benchmark harness for comex (stdlib only, Python 3.11).

Runs bench/pager_bench (a synthetic workload: fill N MiB, then K passes
touching every page once, sequentially or in random order) natively and under
`comex run` against its embedded memnode, all in one run, and writes

  bench/results/pager-<UTC timestamp>.json   (schema comex-bench-pager/1)
  docs/PAGER-BENCH.md                        (regenerated from the newest JSON)

Per pattern (seq, rand) it measures: native; comex with everything fitting in
the budget ("fits": native peak RSS + the runtime's buffers + slack); comex at
100 %, 50 % and 25 % of the native peak RSS (local-mem includes the runtime's
buffers, as for every `comex run`); eviction policy fifo against clock; and
handler spin 0 / 50 us / 200 us. Each configuration runs --runs times (order
reversed on odd runs); results are medians with min/max across runs and a
warning when the spread exceeds 10 %. Slowdowns are against native; the
per-fault latency breakdown comes from the runtime's --stats-json counters.
A checksum that differs from the native run is a hard failure.

  python3 bench/pager.py [--build DIR] [--runs 3] [--size-mib 256]
  python3 bench/pager.py --quick          # smoke run, well under a minute
  python3 bench/pager.py --render-only    # just rewrite docs/PAGER-BENCH.md
"""

import argparse
import dataclasses
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import benchlib
from benchlib import ROOT, SPREAD_LIMIT, cpu_times, finish_machine_info, git_revision, machine_info, pct, summary

SCHEMA = "comex-bench-pager/1"
NAME = "pager"
DOCS_PATH = ROOT / "docs" / "PAGER-BENCH.md"

DEFAULTS = {"size_mib": 256, "passes": 2, "write_pct": 10, "seed": 1, "runs": 3}
QUICK = {"size_mib": 16, "passes": 1, "write_pct": 10, "seed": 1, "runs": 1}
PATTERNS = ("seq", "rand")
PAGE = 4096
RBUF_PAGES, WBUF_PAGES = 4096, 256   # comex defaults (docs/OPTIONS.md): count against local-mem
FITS_SLACK_KIB = 16 * 1024           # "fits": native peak RSS + buffers + this
RUN_TIMEOUT_S = 900
DEFAULT_SPIN = "50us"


@dataclasses.dataclass(frozen=True)
class Config:
    """One way of running the workload."""
    name: str
    level: str | None = None         # None: native; "fits"; or a percentage of native peak RSS
    policy: str = "clock"
    spin: str = DEFAULT_SPIN
    group: str = "level"             # which table it belongs to: level, policy, spin

    @property
    def native(self):
        return self.level is None

    def flags(self, local_mem):
        return [f"--local-mem={local_mem}", f"--evict-policy={self.policy}", f"--handler-spin={self.spin}"]

    def describe(self):
        d = dataclasses.asdict(self)
        d["comex_flags"] = None if self.native else self.flags("<local-mem>")
        return d


CONFIGS = [
    Config("native"),
    Config("fits", "fits"),
    Config("100%", "100"),
    Config("50%", "50"),
    Config("25%", "25"),
    Config("50% fifo", "50", policy="fifo", group="policy"),
    Config("25% fifo", "25", policy="fifo", group="policy"),
    Config("25% spin 0", "25", spin="0", group="spin"),
    Config("25% spin 200us", "25", spin="200us", group="spin"),
]

# Per-fault latency classes: (label, ns counter, count counter), from src/rt/stats.h.
FAULT_CLASSES = [
    ("zero fill", "ns_zero", "faults_zero"),
    ("write-buffer hit", "ns_wbuf_hit", "faults_wbuf_hit"),
    ("read-buffer (prefetch) hit", "ns_rbuf_hit", "faults_rbuf_hit"),
    ("remote read", "ns_remote", "faults_remote"),
    ("eviction, per page", "ns_evict", "pages_evicted"),
]
# Access-phase faults: everything but first-touch zero fills.
ACCESS_FAULTS = ("faults_remote", "faults_wbuf_hit", "faults_rbuf_hit", "faults_wp")


# ------------------------------------------------------------------ processes

def clean_env():
    """Our environment minus anything that would reconfigure comex or UCX."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("COMEX_", "UCX_"))}


def run_measured(cmd, out_path, err_path, timeout):
    """Runs cmd in its own session; returns (status, wall seconds, rusage of
    it and its reaped descendants). Killed (the whole group) after timeout."""
    with open(out_path, "w") as out, open(err_path, "w") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=clean_env(), start_new_session=True)
        timer = threading.Timer(timeout, lambda: os.killpg(p.pid, signal.SIGKILL))
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, wall, ru


def workload_args(bench, pattern, w):
    return [bench, "--pattern", pattern, "--size-mib", str(w["size_mib"]), "--passes", str(w["passes"]),
            "--write-pct", str(w["write_pct"]), "--seed", str(w["seed"])]


def run_once(ctx, cfg, pattern, local_mem, tag):
    """One run of the workload; returns its record (raises RuntimeError)."""
    tmp = Path(ctx["tmp"])
    stats_path = tmp / f"{tag}.stats.json"
    cmd = workload_args(ctx["bench"], pattern, ctx["workload"])
    if not cfg.native:
        stats_path.unlink(missing_ok=True)
        cmd = [ctx["comex"], "run", *cfg.flags(local_mem), f"--stats-json={stats_path}", "--"] + cmd
    rc, wall, ru = run_measured(cmd, tmp / f"{tag}.out", tmp / f"{tag}.err", RUN_TIMEOUT_S)
    err_tail = (benchlib.read_text(tmp / f"{tag}.err") or "").strip()[-1500:]
    if rc:
        raise RuntimeError(f"exit status {rc}: {' '.join(cmd)}\n{err_tail}")
    lines = [ln for ln in (benchlib.read_text(tmp / f"{tag}.out") or "").splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"no JSON line on stdout: {' '.join(cmd)}\n{err_tail}")
    res = json.loads(lines[-1])
    rec = {"fill_s": res["fill_s"], "access_s": res["access_s"], "total_s": res["fill_s"] + res["access_s"],
           "ns_per_page": res["ns_per_page"], "checksum": res["checksum"], "wall_s": round(wall, 4),
           "cpu_s": round(ru.ru_utime + ru.ru_stime, 3), "maxrss_kib": ru.ru_maxrss}
    if not cfg.native:
        try:
            rec["stats"] = json.loads(stats_path.read_text())
        except (OSError, ValueError) as e:
            raise RuntimeError(f"no stats JSON from comex run ({e}): {err_tail}")
        rec["local_mem"] = local_mem
    return rec


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
        rec = run_once(ctx, CONFIGS[0], pattern, None, f"calib-{pattern}")
        ctx["footprint_kib"][pattern] = rec["maxrss_kib"]
        ctx["checksum"][pattern] = rec["checksum"]
        print(f"calibration {pattern}: native peak RSS {rec['maxrss_kib'] // 1024} MiB, "
              f"checksum {rec['checksum']}", flush=True)
    pattern = ctx["patterns"][0]
    run_once(ctx, CONFIGS[1], pattern, local_mem_for(CONFIGS[1], ctx["footprint_kib"][pattern]), "warmup")


def measure(ctx, cfg, pattern, run):
    local_mem = None if cfg.native else local_mem_for(cfg, ctx["footprint_kib"][pattern])
    tag = f"{pattern}-{cfg.name.replace(' ', '_').replace('%', 'pct')}-{run}"
    try:
        rec = run_once(ctx, cfg, pattern, local_mem, tag)
    except (RuntimeError, OSError, ValueError) as e:
        ctx["errors"].append({"pattern": pattern, "config": cfg.name, "run": run, "error": str(e)})
        print(f"  run {run} {pattern:4s} {cfg.name:16s} FAILED: {e}", file=sys.stderr, flush=True)
        return
    if rec["checksum"] != ctx["checksum"][pattern]:
        ctx["errors"].append({"pattern": pattern, "config": cfg.name, "run": run, "checksum_mismatch": True,
                              "error": f"CHECKSUM MISMATCH: {rec['checksum']} != native "
                                       f"{ctx['checksum'][pattern]} (memory corrupted under comex)"})
        print(f"  run {run} {pattern:4s} {cfg.name:16s} CHECKSUM MISMATCH {rec['checksum']} != "
              f"{ctx['checksum'][pattern]}", file=sys.stderr, flush=True)
        return
    rec["run"] = run
    ctx["samples"].setdefault((pattern, cfg.name), []).append(rec)
    st = rec.get("stats", {})
    print(f"  run {run} {pattern:4s} {cfg.name:16s} total {rec['total_s']:8.3f} s  access {rec['access_s']:8.3f} s"
          f"  wall {rec['wall_s']:7.2f} s  remote faults {st.get('faults_remote', 0):7d}", flush=True)


def measure_all(ctx, runs):
    order = [(p, c) for p in ctx["patterns"] for c in CONFIGS]
    for run in range(runs):
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


def aggregate(samples, patterns):
    """One result per (pattern, configuration), with slowdowns against the
    native result of the same pattern (ratio of medians, and the median of
    per-run ratios, runs with the same index being close in time)."""
    results = []
    for pattern in patterns:
        native = samples.get((pattern, "native"))
        nat = {k: statistics.median(r[k] for r in native) for k in ("total_s", "access_s", "wall_s", "fill_s")} \
            if native else {}
        nat_by_run = {r["run"]: r for r in native or []}
        for cfg in CONFIGS:
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
            if not cfg.native:
                res["faults"] = fault_latencies(recs)
                keys = ("faults_wp", "pages_prefetch_mapped", "pages_evicted", "pages_written", "pages_dropped_clean",
                        "pages_dropped_zero", "remote_reads", "remote_writes", "bytes_read", "bytes_written",
                        "resident_peak_bytes", "local_mem_bytes", "rbuf_bytes", "wbuf_bytes", "budget_overshoots")
                res["counters"] = {k: int(statistics.median(r["stats"].get(k, 0) for r in recs)) for k in keys}
                c = res["counters"]
                res["pages_per_remote_read"] = round(c["bytes_read"] / PAGE / c["remote_reads"], 2) \
                    if c["remote_reads"] else None
                n_faults = sum(int(statistics.median(r["stats"].get(k, 0) for r in recs)) for k in ACCESS_FAULTS)
                extra = res["access_s"]["median"] - nat.get("access_s", 0)
                res["access_faults"] = n_faults
                res["observed_us_per_access_fault"] = round(extra / n_faults * 1e6, 1) if n_faults and nat else None
            results.append(res)
    return results


def find(results, pattern, config):
    return next((r for r in results if r["pattern"] == pattern and r["config"] == config), None)


def warnings_for(results, errors, machine, quick):
    w = []
    for r in results:
        for k in ("total_s", "access_s"):
            if r[k]["spread"] > SPREAD_LIMIT:
                w.append(f"{r['pattern']} {r['config']}: {k} spread across runs {r[k]['spread'] * 100:.0f} % "
                         f"> {SPREAD_LIMIT * 100:.0f} % ({r[k]['min']:.3f}–{r[k]['max']:.3f} s)")
        if r["config"] == "fits" and r["counters"]["pages_evicted"]:
            w.append(f"{r['pattern']} fits: {r['counters']['pages_evicted']} pages were evicted; "
                     f"the 'fits' budget did not hold everything")
    w += benchlib.busy_warnings(machine)
    if any(e.get("checksum_mismatch") for e in errors):
        w.append("CHECKSUM MISMATCH: comex returned different memory contents than the native run")
    if errors:
        w.append(f"{len(errors)} run(s) failed; see 'errors'")
    if quick:
        w.append("--quick smoke run: tiny footprint and one run, not meaningful numbers")
    return w


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
                    f"{sec(r['access_s'])} | {fx(r['slowdown']['access_s'])} | {r['ns_per_page']['median']:.0f} | "
                    f"{r['wall_s']['median']:.2f} | {r['cpu_s']['median']:.1f} | "
                    f"{r['faults']['faults_remote']['count'] if c else '–'} | "
                    f"{mib(c['bytes_read']) if c else '–'} | {mib(c['bytes_written']) if c else '–'} |")
    return "\n".join(rows)


def variant_table(results, group, base_names):
    rows = ["| pattern | config | access s (min–max) | slowdown | remote faults | pages/remote read | "
            "pages evicted | dropped clean | MiB read | µs/remote fault (handler) | µs/fault (program) | CPU s |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        if r["config"] not in base_names and r["group"] != group:
            continue
        if r["group"] not in ("level", group) or r["config"] in ("native", "fits", "100%"):
            continue
        c = r["counters"]
        rows.append(f"| {r['pattern']} | {r['config']}{'' if r['group'] == group else ' (clock, spin 50us)'} | "
                    f"{sec(r['access_s'])} | {fx(r['slowdown']['access_s'])} | {r['faults']['faults_remote']['count']} | "
                    f"{r['pages_per_remote_read'] or '–'} | {c['pages_evicted']} | {c['pages_dropped_clean']} | "
                    f"{mib(c['bytes_read'])} | {fus(r['faults']['faults_remote']['us'])} | "
                    f"{fus(r['observed_us_per_access_fault'])} | {r['cpu_s']['median']:.1f} |")
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


def headline(results, patterns):
    s = []
    for p in patterns:
        fits, n = find(results, p, "fits"), find(results, p, "native")
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
                s.append(f"{p} at {lvl}: total {fx(r['slowdown']['total_s'])}, access phase {fx(r['slowdown']['access_s'])} "
                         f"({r['ns_per_page']['median'] / 1000:.1f} µs per page touched vs "
                         f"{n['ns_per_page']['median']:.0f} ns natively).")
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
            s.append(f"{p}, fits: the only userfaultfd work is first touch — {zf['count']} zero-fill faults "
                     f"(one per {doc['options'].get('zero_fill_window', 64)}-page window) at {fus(zf['us'])} µs "
                     f"handler-side, {zero_ms:.0f} ms in all; every other page is then an ordinary kernel "
                     f"fault on the zero page. The fill phase goes from {n['fill_s']['median']:.3f} s to "
                     f"{fits['fill_s']['median']:.3f} s, the access phase (no faults) from "
                     f"{n['access_s']['median'] * 1000:.1f} ms to {fits['access_s']['median'] * 1000:.1f} ms.")
        r25 = find(res, p, "25%")
        if r25:
            rf = r25["faults"]["faults_remote"]
            ev = r25["faults"]["pages_evicted"]
            c = r25["counters"]
            remote_s = (rf["us"] or 0) * rf["count"] / 1e6
            s.append(f"{p} at 25 %: {rf['count']} remote faults at {fus(rf['us'])} µs each handler-side "
                     f"(including any eviction they had to do first) ≈ {remote_s:.1f} s of the "
                     f"{r25['access_s']['median']:.1f} s access phase; a remote read brings "
                     f"{r25['pages_per_remote_read'] or 0:.1f} pages on average (prefetch window 16). "
                     f"Eviction costs {fus(ev['us'])} µs per page; {c['pages_dropped_clean']} of "
                     f"{c['pages_evicted']} evicted pages were dropped clean (no rewrite). The program "
                     f"sees {fus(r25['observed_us_per_access_fault'])} µs per access-phase fault "
                     f"(remote + write-protect + buffer hits), the difference to the handler-side time "
                     f"being the userfaultfd round trip and wake-ups.")
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
    s += robustness_sentences(doc)
    return "\n".join(f"- {x}" for x in s)


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


def render_docs(doc, json_path):
    m, o = doc["machine"], doc["options"]
    warnings = "\n".join(f"- {w}" for w in doc["warnings"]) or "- none"
    errors = "\n".join(f"- {e['pattern']} {e['config']} run {e['run']}:\n\n      "
                       + e["error"].replace("\n", "\n      ") + "\n" for e in doc["errors"]) or "- none"
    tables = "\n\n".join(f"### {p}\n\n{level_table(doc['results'], p)}" for p in o["patterns"])
    text = f"""# Pager benchmark

<!-- Generated by bench/pager.py from {json_path.relative_to(ROOT)}; do not edit by hand. -->

What does `comex run` cost an unmodified program: nothing much when its memory
fits in the budget (issue target: ≤ 5 % overhead), and how much when only
100 %, 50 % or 25 % of its footprint may stay local? Where does the time of
one fault go? Does CLOCK beat FIFO, and does the fault handler's spinning pay?

## What is measured

`bench/pager_bench --pattern seq|rand --size-mib {o['size_mib']} --passes {o['passes']} --write-pct {o['write_pct']} --seed {o['seed']}`
mallocs {o['size_mib']} MiB, fills every word (the first touch of every page: *fill*), then makes
{o['passes']} passes touching each 4 KiB page once (*access*): in address order (`seq`) or in
a fresh random permutation per pass (`rand`), reading one word and writing one
in {o['write_pct']} % of the pages. It prints a checksum of everything read, which must equal
the native run's (it did in every run reported here, or the run is listed under Errors).
*total* = fill + access as timed inside the program (`CLOCK_MONOTONIC`); *wall*
also counts process start, `comex run`'s embedded memnode start-up (a 1 GiB
pool, populated and locked) and exit. Slowdown = comex median / native median.

Budgets: `local-mem` is a share of the native run's peak RSS
({", ".join(f"{p} {k // 1024} MiB" for p, k in o['footprint_kib'].items())}), and as for every `comex run` it
includes the runtime's own buffers (read buffer {RBUF_PAGES} pages = 16 MiB, write
buffer {WBUF_PAGES} pages, shrunk at small budgets), so at "100 %" the program's pages do
*not* all fit. *fits* adds those buffers plus {FITS_SLACK_KIB // 1024} MiB: nothing is evicted.
Every comex run passes `--evict-policy`, `--handler-spin` explicitly; all other
options are defaults (prefetch 16, prefetch-map on, zero-fill window 64,
evict-batch 64, memnode idle-spin 200 µs, client-spin 100 µs).

Each configuration ran {o['runs']} times, runs interleaved (order reversed on odd
runs); numbers are medians with min–max across runs; ⚠ marks a spread above
{SPREAD_LIMIT * 100:.0f} %. Per-fault latencies are handler-side means from the runtime's
`--stats-json` counters (`ns_*` / count; a fault's time includes evictions it
triggered); *µs/fault (program)* is (comex access time − native access time) /
access-phase faults (remote + write-protect + buffer hits), what the program
actually waits per fault.

## Machine

{m['cpu_model']}, {m['cores']} cores{' (VM)' if m['hypervisor'] else ''}, kernel {m['kernel']},
THP {m['thp_enabled']}, UCX {m['ucx']['version']}, git {doc['git']['rev'][:12]}{' (dirty tree)' if doc['git']['dirty'] else ''},
run {doc['timestamp']} ({o['duration_s'] / 60:.0f} min); load average {' '.join(m['loadavg_start'])} before,
{' '.join(m['loadavg_end'])} after; other load on the CPUs {m['background_cpu_busy_start'] * 100:.0f} % before,
{m['background_cpu_busy_end'] * 100:.0f} % after; hypervisor steal {pct(m.get('cpu_steal_during_run'))}.

## Headline

{headline(doc['results'], o['patterns'])}

## Slowdown by local memory (clock, handler spin 50 µs)

{tables}

## Eviction policy: clock vs fifo

{variant_table(doc['results'], 'policy', ('50%', '25%'))}

## Fault handler spin: 0 / 50 µs / 200 µs

{variant_table(doc['results'], 'spin', ('25%',))}

## Per-fault latency (handler-side µs, median over runs; n = faults or pages per run)

{latency_table(doc['results'])}

## Where the time goes

{analysis(doc)}
{NOTES}
## Warnings

{warnings}

## Errors

{errors}

Reproduce: `make build && python3 bench/pager.py` (about {o['duration_s'] / 60:.0f} minutes; `--quick` for a
smoke run, `--render-only` to regenerate this page from the newest JSON).
"""
    DOCS_PATH.write_text(text)


# Observations that the numbers above support but that the generator cannot
# derive; kept short and re-checked whenever the page is regenerated.
NOTES = """
Design observations behind these numbers (see src/rt/pager.c):

- A remote read fetches the faulting page's run of pages in *consecutive
  frames* within its aligned 16-page window. A page written after it came
  back loses its frame, and is written to a new frame when evicted again, so
  its neighbours' frames stop being consecutive: with writes, runs get cut
  short (*pages/remote read* below 16) even for a sequential scan.
- A cyclic scan over more than the budget misses on every page under FIFO and
  under CLOCK alike (both evict the page that will be needed soonest); only
  prefetch reduces the number of faults. CLOCK's second chance is given only
  to pages written since they came back (no accessed bits), so it can only
  differ from FIFO through the written pages.
- Per-fault times are handler-side; the program also waits for the
  userfaultfd wake-up of the handler and of itself, and on this 2-core VM all
  of program, handler, embedded memnode (busy-polling 200 µs after each
  request) and the transport compete for two cores.
"""


# ------------------------------------------------------------------ main

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="build directory holding comex and pager_bench")
    ap.add_argument("--runs", type=int, help=f"runs per configuration (default {DEFAULTS['runs']}; >= 3 for real numbers)")
    ap.add_argument("--size-mib", type=int, help=f"workload footprint (default {DEFAULTS['size_mib']})")
    ap.add_argument("--passes", type=int, help=f"access passes (default {DEFAULTS['passes']})")
    ap.add_argument("--write-pct", type=int, help=f"share of touches that write (default {DEFAULTS['write_pct']})")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--patterns", default=",".join(PATTERNS), help="comma-separated subset of seq,rand")
    ap.add_argument("--quick", action="store_true", help="smoke run: 16 MiB, one pass, one run")
    ap.add_argument("--render-only", action="store_true", help="only regenerate docs/PAGER-BENCH.md")
    return ap.parse_args(argv)


def binaries(build):
    build = Path(build) if Path(build).is_absolute() else ROOT / build
    comex, bench = build / "comex", build / "pager_bench"
    for b in (comex, bench, build / "libcomex-rt.so"):
        if not os.path.exists(b):
            sys.exit(f"pager.py: {b} not found; build first (make build)")
    return str(comex), str(bench)


def main(argv):
    args = parse_args(argv)
    if args.render_only:
        path = benchlib.newest_json(NAME)
        if not path:
            sys.exit("pager.py: no bench/results/pager-*.json yet")
        render_docs(json.loads(path.read_text()), path)
        print(f"wrote {DOCS_PATH}")
        return 0
    comex, bench = binaries(args.build)
    base = QUICK if args.quick else DEFAULTS
    w = {k: getattr(args, k) if getattr(args, k) is not None else base[k]
         for k in ("size_mib", "passes", "write_pct", "seed")}
    runs = args.runs or base["runs"]
    patterns = [p for p in args.patterns.split(",") if p]
    if any(p not in PATTERNS for p in patterns):
        sys.exit(f"pager.py: --patterns takes {','.join(PATTERNS)}")
    started = time.monotonic()
    machine = machine_info()
    times0 = cpu_times()
    git = git_revision()  # now: others may commit while the run goes on
    tmp = tempfile.mkdtemp(prefix="comex-pager-bench-")
    ctx = {"comex": comex, "bench": bench, "tmp": tmp, "workload": w, "patterns": patterns,
           "footprint_kib": {}, "checksum": {}, "samples": {}, "errors": []}
    try:
        calibrate(ctx)
        measure_all(ctx, runs)
    finally:
        if not os.environ.get("PAGER_BENCH_KEEP_TMP"):
            subprocess.run(["rm", "-rf", tmp])
    finish_machine_info(machine, times0)
    results = aggregate(ctx["samples"], patterns)
    doc = {
        "schema": SCHEMA,
        "timestamp": benchlib.utc_stamp(),
        "machine": machine,
        "git": git,
        "options": dict(w, runs=runs, quick=args.quick, patterns=patterns, footprint_kib=ctx["footprint_kib"],
                        native_checksum=ctx["checksum"], build=str(Path(comex).parent),
                        fits_slack_kib=FITS_SLACK_KIB, rbuf_pages=RBUF_PAGES, wbuf_pages=WBUF_PAGES,
                        zero_fill_window=64, environment="COMEX_* and UCX_* removed",
                        duration_s=round(time.monotonic() - started, 1)),
        "configs": [c.describe() for c in CONFIGS],
        "results": results,
        "errors": ctx["errors"],
    }
    doc["warnings"] = warnings_for(results, ctx["errors"], machine, args.quick)
    path = benchlib.write_json(doc, NAME)
    render_docs(doc, path)
    print(f"wrote {path} and {DOCS_PATH} in {doc['options']['duration_s']} s")
    for x in doc["warnings"]:
        print(f"warning: {x}", file=sys.stderr)
    return 1 if ctx["errors"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
