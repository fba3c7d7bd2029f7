"""Plots (docs/img/bench-*.png) and docs/RESULTS.md from the newest result
file of each experiment in bench/results; a section whose file ran on
another machine or build than the newest file says so under its heading."""

import glob
import json
import os
import re
import statistics

from . import results
from .sysenv import ROOT, log

IMG = ROOT / "docs" / "img"
DOC = ROOT / "docs" / "RESULTS.md"
NOTES = ROOT / "bench" / "results" / "notes.md"
MODE_ORDER = ["local", "swap-disk", "zram", "comex-shm", "comex", "comex-net10", "comex-net25",
              "comex-rtt3", "comex-rtt15", "comex-rtt30", "comex-rtt15-n3", "comex-swap", "comex-swap+zswap"]
SWAP_MODES = ["comex-swap", "comex-swap+zswap"]   # the kernel swapping to comex swap: not comex run
COMEX_MODES = [m for m in MODE_ORDER if m.startswith("comex") and m not in SWAP_MODES]
COLORS = {"local": "#444444", "swap-disk": "#d62728", "zram": "#ff7f0e", "comex": "#1f77b4",
          "comex-shm": "#17becf", "comex-net10": "#2ca02c", "comex-net25": "#9467bd",
          "comex-rtt3": "#8c564b", "comex-rtt15": "#e377c2", "comex-rtt30": "#7f7f7f", "comex-swap": "#bcbd22",
          "comex-swap+zswap": "#aec7e8"}
# the fractions and the bound of the targets (sec_targets)
TARGET_FRACTIONS = [50, 25]
TARGET_MEDIAN_FRACTION = 50
TARGET_MEDIAN_SLOWDOWN = 2.0
NEIGHBOUR_NAMES = {"none": "no neighbour", "stress-1": "stress-ng --cpu 1", "stress": "stress-ng --cpu N",
                   "stress-nice": "nice -n 19 stress-ng --cpu N"}
FAULT_KEYS = [("faults_zero", "first touch (zero)"), ("faults_wbuf_hit", "write-buffer hit"),
              ("faults_rbuf_hit", "read-buffer hit"), ("faults_remote", "remote read"),
              ("pages_prefetch_mapped", "prefetched, mapped with the read"), ("faults_wp", "write to a clean page")]


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_figure(plt, fig, name, title=None):
    """Writes fig (with the overall title, when given) as
    docs/img/bench-NAME.png and closes it; returns the page's link to it."""
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(IMG / ("bench-%s.png" % name), dpi=110)
    plt.close(fig)
    return "![%s](img/bench-%s.png)\n" % (name, name)


def hib(doc, w):
    return doc["workloads"].get(w, {}).get("higher_is_better", False)


def metric(doc, w):
    return doc["workloads"].get(w, {}).get("metric", "time_s")


def slow(doc, w, value):
    """Slowdown against the local reference (>1 is slower)."""
    ref = doc["references"][w]["metric"]
    return ref / value if hib(doc, w) else value / ref


def cell(doc, s, w=None):
    """'median (min–max)' slowdown, or the reason it is missing."""
    w = w or s["workload"]
    m = s.get(s["metric"])

    def short(why):
        if why.startswith("OOM"):
            return "OOM-killed"
        if why.startswith("timeout"):
            return "timeout"
        if "larger fraction" in why:
            return "skipped after a timeout"
        if "differs" in why:
            return "WRONG OUTPUT"
        if "no room beside its buffers" in why:
            return "comex cannot start (budget < buffers)"
        return why[:40]

    def kinds(whys):
        out = []
        for w in whys:
            if short(str(w)) not in out:
                out.append(short(str(w)))
        return " / ".join(out)
    if not m:
        return kinds(s["failed"] or ["no run"])
    lo, hi = sorted((slow(doc, w, m["min"]), slow(doc, w, m["max"])))
    txt = "%.2fx (%.2f–%.2f)" % (slow(doc, w, m["median"]), lo, hi) if m["n"] > 1 else "%.2fx" % slow(doc, w, m["median"])
    if s.get("warn_spread"):
        txt += " ⚠"
    if s["verified_runs"] < s["runs"]:
        txt += " (%d/%d ok; else %s)" % (s["verified_runs"], s["runs"], kinds(s["failed"]))
    return txt


def summaries(doc, **kw):
    out = []
    for s in doc["summary"]:
        if all(s.get(k) == v for k, v in kw.items()):
            out.append(s)
    return out


def one(doc, **kw):
    s = summaries(doc, **kw)
    return s[0] if s else None


def modes_of(doc):
    ms = {s["mode"] for s in doc["summary"]}
    return [m for m in MODE_ORDER if m in ms]


def meta_lines(doc):
    m = doc["metadata"]
    c = m["checked"]
    return ("%s, %d cores, %d MiB RAM, kernel %s, THP %s, cgroup %s, UCX %s, comex binaries sha256 %s "
            "(repository HEAD %s at the start%s); load average %s before, %s after"
            % (c["cpu"], c["cores"], c["mem_total_mib"], c["kernel"], c["thp"], c["cgroup"], m.get("ucx"),
               c.get("build_sha256", "?"), m.get("git_rev", c.get("git_rev", "?"))[:12],
               " + uncommitted changes of others" if m.get("git_dirty") else "",
               "/".join("%.1f" % x for x in m["load_before"]), "/".join("%.1f" % x for x in m.get("load_after", []))))


# ---------------------------------------------------------------- sections

def sec_sweep(doc, out, plt):
    wls = sorted({s["workload"] for s in doc["summary"] if s["mode"] != "local"})
    fr = sorted({s["fraction"] for s in doc["summary"] if s["fraction"]}, reverse=True)
    modes = [m for m in modes_of(doc) if m != "local"]
    out.append("## Slowdown against local memory (sweep)\n")
    out.append("Each cell: the run's %s relative to the unlimited local run of the same workload (1.00x = as fast "
               "as local; for redis, GET throughput), median of the verified runs with (min–max). Columns: the "
               "cgroup memory limit in %% of the workload's local peak RSS. Result file `%s`.\n"
               % ("metric", doc["_path"]))
    for w in wls:
        ref = doc["references"][w]
        out.append("### %s — footprint %d MiB, local %s\n" % (w, ref["footprint_bytes"] >> 20, fmt_metric(doc, w, ref["metric"])))
        out.append("| mode | " + " | ".join("%d %%" % f for f in fr) + " |")
        out.append("|---|" + "---|" * len(fr))
        for m in modes:
            row = []
            for f in fr:
                s = one(doc, workload=w, mode=m, fraction=f, k=1)
                row.append(cell(doc, s) if s else "—")
            out.append("| %s | %s |" % (m, " | ".join(row)))
        # comex against the swap modes, same run
        for cm in [m for m in modes if m in ("comex-shm", "comex")]:
            for base in ("swap-disk", "zram"):
                row = []
                for f in fr:
                    a, b = one(doc, workload=w, mode=cm, fraction=f), one(doc, workload=w, mode=base, fraction=f)
                    ma, mb = (a or {}).get(metric(doc, w)), (b or {}).get(metric(doc, w))
                    if ma and mb:
                        sp = (ma["median"] / mb["median"]) if hib(doc, w) else (mb["median"] / ma["median"])
                        row.append("%.2fx" % sp)
                    elif mb and not ma:
                        row.append("%s failed" % cm)
                    elif ma and not mb:
                        row.append("%s failed" % base)
                    else:
                        row.append("—")
                out.append("| %s speedup over %s | %s |" % (cm, base, " | ".join(row)))
        out.append("")
        if w == "redis":
            out.append("redis-benchmark detail (median of runs): GET ops/s, GET p50 / p99 ms, SET ops/s, SET p99 ms\n")
            out.append("| mode | limit | GET ops/s | GET p50 | GET p99 | SET ops/s | SET p99 |")
            out.append("|---|---|---|---|---|---|---|")
            for s in sorted(summaries(doc, workload="redis"), key=lambda s: (MODE_ORDER.index(s["mode"]), -(s["fraction"] or 101))):
                if "get_rps" not in s:
                    continue
                out.append("| %s | %s | %.0f | %.2f | %.2f | %.0f | %.2f |" % (
                    s["mode"], "%d %%" % s["fraction"] if s["fraction"] else "none", s["get_rps"]["median"],
                    s["get_p50_ms"]["median"], s["get_p99_ms"]["median"], s["set_rps"]["median"],
                    s["set_p99_ms"]["median"]))
            out.append("")
    # plot: one panel per workload, slowdown vs limit, a line per mode (seed 001 Fig. 1/10 as lines)
    n = len(wls)
    if not n:
        return
    fig, axes = plt.subplots(1, n, figsize=(5 * n, 3.8), squeeze=False)
    for ax, w in zip(axes[0], wls):
        for m in modes:
            xs, ys, lo, hi = [], [], [], []
            for f in fr:
                s = one(doc, workload=w, mode=m, fraction=f, k=1)
                v = (s or {}).get(metric(doc, w))
                if v:
                    xs.append(f)
                    ys.append(slow(doc, w, v["median"]))
                    a, b = sorted((slow(doc, w, v["min"]), slow(doc, w, v["max"])))
                    lo.append(ys[-1] - a)
                    hi.append(b - ys[-1])
            if xs:
                ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=m, color=COLORS.get(m))
        ax.set_yscale("log")
        ax.set_xlim(105, 5)
        ax.set_xticks(fr)
        ax.set_xlabel("local memory (% of footprint)")
        ax.set_ylabel("slowdown vs local (log)" if not hib(doc, w) else "GET throughput loss vs local (log)")
        ax.set_title(w)
        ax.axhline(1, color="#999999", lw=0.8)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    out.append(save_figure(plt, fig, "sweep", "Slowdown against an unlimited local run, same cgroup limit for every "
                                              "mode (median, min–max)"))
    # Fig. 13 style: comex speedup over each swap mode vs M
    cm = primary_comex(doc)
    fig, axes = plt.subplots(1, n, figsize=(5 * n, 3.5), squeeze=False)
    for ax, w in zip(axes[0], wls):
        width = 0.38
        for j, base in enumerate(("swap-disk", "zram")):
            xs, ys = [], []
            for i, f in enumerate(fr):
                a, b = one(doc, workload=w, mode=cm, fraction=f), one(doc, workload=w, mode=base, fraction=f)
                ma, mb = (a or {}).get(metric(doc, w)), (b or {}).get(metric(doc, w))
                if ma and mb:
                    xs.append(i + (j - 0.5) * width)
                    ys.append((ma["median"] / mb["median"]) if hib(doc, w) else (mb["median"] / ma["median"]))
            ax.bar(xs, ys, width, label="over %s" % base, color=COLORS[base])
        ax.axhline(1, color="black", lw=0.8)
        ax.set_xticks(range(len(fr)))
        ax.set_xticklabels(["%d %%" % f for f in fr])
        ax.set_xlabel("local memory M (% of footprint)")
        ax.set_ylabel("%s speedup (>1: comex faster)" % cm)
        ax.set_yscale("log")
        ax.set_title(w)
    axes[0][0].legend(fontsize=8)
    out.append(save_figure(plt, fig, "speedup",
                           "comex speedup over Linux swap at the same limit M (cf. COMEX Fig. 13)"))
    if "redis" in wls:
        fig, ax = plt.subplots(figsize=(8, 4))
        ax2 = ax.twinx()
        width = 0.8 / max(1, len(modes))
        for j, m in enumerate(modes):
            xs, ys, ps = [], [], []
            for i, f in enumerate(fr):
                s = one(doc, workload="redis", mode=m, fraction=f)
                if s and s.get("get_rps"):
                    xs.append(i + (j - len(modes) / 2 + 0.5) * width)
                    ys.append(s["get_rps"]["median"] / 1000)
                    ps.append(s["get_p99_ms"]["median"])
            ax.bar(xs, ys, width, color=COLORS.get(m), label=m)
            ax2.plot(xs, ps, marker="o", color=COLORS.get(m), lw=1.2)
        ax.axhline(doc["references"]["redis"]["metric"] / 1000, color="black", ls="--", lw=0.8)
        ax.set_xticks(range(len(fr)))
        ax.set_xticklabels(["%d %%" % f for f in fr])
        ax.set_xlabel("redis working set in local memory")
        ax.set_ylabel("GET throughput (k ops/s, bars; dashed: local)")
        ax2.set_ylabel("GET p99 latency (ms, lines, log)")
        ax2.set_yscale("log")
        ax.legend(fontsize=8, loc="upper right")
        ax.set_title("redis-server + redis-benchmark (cf. Infiniswap Fig. 1 / 10)")
        out.append(save_figure(plt, fig, "redis"))


def primary_comex(doc):
    """The comex mode the targets and the speedup plot are about: the embedded
    memnode on shared memory (what `comex run` does by default) when the run
    has it, else the first comex mode present."""
    ms = modes_of(doc)
    return next((m for m in COMEX_MODES if m in ms), "comex")


def cost(doc, w, s):
    """The median of a summary as a time (1 / throughput for redis), or None."""
    m = (s or {}).get(metric(doc, w))
    if not m or not m["median"]:
        return None
    return 1.0 / m["median"] if hib(doc, w) else m["median"]


def why_missing(doc, s):
    return cell(doc, s) if s else "not run"


def pct_slower(r):
    """r = comex time / other time > 1, as words."""
    return "%.0f %% slower (%.2fx)" % (100 * (r - 1), r)


def sec_targets(docs, out):
    """The issue's targets, checked against the data (never hard-coded)."""
    sw, busy = docs.get("sweep"), docs.get("busy")
    if not sw and not busy:
        return
    out.append("## Targets\n")
    out.append("Computed by `bench/harness/report.py` from the result files below. A workload counts as "
               "sequential or streaming by its `access` class (docs/BENCH.md). ✅ met, ❌ missed (by how much), "
               "— no data.\n")
    rows = []
    if sw:
        sw["summary"] = results.summarize(sw["records"], lambda w, d=sw: metric(d, w))
        wls = sorted({s["workload"] for s in sw["summary"] if s["mode"] != "local"})
        frs = [f for f in TARGET_FRACTIONS if any(s["fraction"] == f for s in sw["summary"])]
        for cm in [m for m in COMEX_MODES if m in modes_of(sw)]:
            for base, which, label in (("swap-disk", wls, "faster than swap-disk on every workload"),
                                       ("zram", [w for w in wls if sw["workloads"].get(w, {}).get("access") in
                                                 ("sequential", "streaming")],
                                        "no slower than zram on sequential and streaming workloads")):
                if base not in modes_of(sw) or not which:
                    continue
                for f in frs:
                    met, missed, nodata = [], [], []
                    for w in which:
                        a, b = one(sw, workload=w, mode=cm, fraction=f, k=1), one(sw, workload=w, mode=base,
                                                                                  fraction=f, k=1)
                        ca, cb = cost(sw, w, a), cost(sw, w, b)
                        if ca and cb:
                            r = ca / cb
                            ok = r < 1 if base == "swap-disk" else r <= 1
                            (met if ok else missed).append("%s %s" % (
                                w, ("%.2fx faster" % (1 / r)) if r < 1 else ("%.2fx" % r if ok else pct_slower(r))))
                        elif ca and b:
                            met.append("%s (%s: %s)" % (w, base, why_missing(sw, b)))
                        elif a and cb:
                            missed.append("%s (%s: %s)" % (w, cm, why_missing(sw, a)))
                        else:
                            nodata.append(w)
                    mark = "—" if not met and not missed else ("✅" if not missed else "❌")
                    detail = "; ".join(["missed: " + ", ".join(missed)] if missed else []) or \
                        "met: " + ", ".join(met)
                    if missed and met:
                        detail += "; met: " + ", ".join(met)
                    if nodata:
                        detail += "; no data: " + ", ".join(nodata)
                    rows.append((cm, "%s at %d %%" % (label, f), mark, detail))
            f = TARGET_MEDIAN_FRACTION
            if f in frs or any(s["fraction"] == f for s in sw["summary"]):
                sl, failed = [], []
                for w in wls:
                    a = one(sw, workload=w, mode=cm, fraction=f, k=1)
                    ca, cr = cost(sw, w, a), (1 / sw["references"][w]["metric"] if hib(sw, w)
                                              else sw["references"][w]["metric"])
                    if ca:
                        sl.append((ca / cr, w))
                    elif a:
                        failed.append(w)
                        sl.append((float("inf"), w))
                if sl:
                    med = statistics.median(v for v, _ in sl)
                    ok = med <= TARGET_MEDIAN_SLOWDOWN
                    detail = "median %s over %d workloads (%s)" % (
                        "%.2fx" % med if med != float("inf") else "∞ (most runs failed)", len(sl),
                        ", ".join("%s %s" % (w, "%.2fx" % v if v != float("inf") else "failed") for v, w in sorted(sl)))
                    if not ok and med != float("inf"):
                        detail += "; missed by %.2fx (%.0f %% over the bound)" % (
                            med / TARGET_MEDIAN_SLOWDOWN, 100 * (med / TARGET_MEDIAN_SLOWDOWN - 1))
                    if failed:
                        detail += "; failed runs count as infinitely slow"
                    rows.append((cm, "median slowdown vs all-local ≤ %.0f× at %d %%" % (TARGET_MEDIAN_SLOWDOWN, f),
                                 "✅" if ok else "❌", detail))
    if busy:
        busy["summary"] = results.summarize(busy["records"], lambda w, d=busy: metric(d, w))
        for (cm, base, w, nb, g_c, g_b, why) in busy_growth(busy):
            if g_c is None or g_b is None:
                rows.append((cm, "slowdown growth beside %s ≤ %s's (%s)" % (nb, base, w), "—", why))
                continue
            ok = g_c <= g_b
            detail = "%s: slowdown x%.2f beside the neighbour, %s: x%.2f" % (cm, g_c, base, g_b)
            if not ok:
                detail += "; missed by %.2fx" % (g_c / g_b)
            rows.append((cm, "slowdown growth beside %s ≤ %s's (%s)" % (nb, base, w), "✅" if ok else "❌", detail))
    out.append("| mode | target | | detail |")
    out.append("|---|---|---|---|")
    for r in rows:
        out.append("| %s | %s | %s | %s |" % r)
    out.append("")


def busy_slowdowns(doc, w, m, nb):
    """(slowdown of mode m beside neighbour nb against local beside the same
    neighbour, the mode's summary, local's summary)."""
    s = one(doc, workload=w, mode=m, neighbour=nb, k=1)
    loc = one(doc, workload=w, mode="local", neighbour=nb, k=1)
    cs, cl = cost(doc, w, s), cost(doc, w, loc)
    return (cs / cl if cs and cl else None), s, loc


def busy_growth(doc):
    """Rows (comex mode, swap mode, workload, neighbour, comex's growth,
    the swap mode's growth, why missing): growth = slowdown beside the
    neighbour / slowdown without."""
    out = []
    modes = modes_of(doc)
    nbs = [n for n in NEIGHBOUR_NAMES if n != "none" and any(s.get("neighbour") == n for s in doc["summary"])]
    for w in sorted({s["workload"] for s in doc["summary"]}):
        for cm in [m for m in COMEX_MODES if m in modes]:
            for base in [b for b in ("swap-disk", "zram") if b in modes]:
                for nb in nbs:
                    g = []
                    why = []
                    for m in (cm, base):
                        s1, a, _ = busy_slowdowns(doc, w, m, nb)
                        s0, b, _ = busy_slowdowns(doc, w, m, "none")
                        if s1 and s0:
                            g.append(s1 / s0)
                        else:
                            g.append(None)
                            why.append("%s: %s" % (m, why_missing(doc, a if not s1 else b)))
                    out.append((cm, base, w, nb, g[0], g[1], "; ".join(why)))
    return out


def sec_busy(doc, out, plt):
    frac = doc["metadata"]["options"].get("busy_fraction") or 25
    out.append("## A busy machine: the %d %% runs beside a CPU-bound neighbour\n" % frac)
    out.append("Each mode at %d %% of the footprint and local (unlimited), without a neighbour and beside one "
               "on every core, started by the harness for each run and stopped after it (%s). Slowdown: against "
               "local beside the same neighbour; growth: the slowdown beside the neighbour divided by the slowdown "
               "without; the target is comex's growth ≤ swap's. Result file `%s`.\n"
               % (frac, "; ".join("`%s`: %s" % kv for kv in NEIGHBOUR_NAMES.items()), doc["_path"]))
    nbs = [n for n in NEIGHBOUR_NAMES if any(s.get("neighbour") == n for s in doc["summary"])]
    modes = modes_of(doc)
    for w in sorted({s["workload"] for s in doc["summary"]}):
        out.append("### %s — footprint %d MiB\n" % (w, doc["references"][w]["footprint_bytes"] >> 20))
        out.append("| mode | " + " | ".join("%s: %s / slowdown" % (n, metric(doc, w)) for n in nbs) +
                   " | " + " | ".join("growth beside %s" % n for n in nbs if n != "none") + " |")
        out.append("|---|" + "---|" * (2 * len(nbs) - 1))
        for m in modes:
            row, sl = [], {}
            for n in nbs:
                v, s, _ = busy_slowdowns(doc, w, m, n)
                if m == "local":
                    c = cost(doc, w, s)
                    row.append(fmt_metric(doc, w, (1 / c if hib(doc, w) else c)) if c else why_missing(doc, s))
                    continue
                sl[n] = v
                c = cost(doc, w, s)
                row.append("%s / %.2fx%s" % (fmt_metric(doc, w, (1 / c if hib(doc, w) else c)), v,
                                              " ⚠" if s.get("warn_spread") else "") if v else why_missing(doc, s))
            for n in nbs:
                if n == "none":
                    continue
                row.append("x%.2f" % (sl[n] / sl["none"]) if sl.get(n) and sl.get("none") else "—")
            out.append("| %s | %s |" % (m, " | ".join(row)))
        out.append("")


def fmt_metric(doc, w, v):
    return "%.0f GET ops/s" % v if hib(doc, w) else "%.2f s" % v


def sec_faults(doc, out, plt):
    out.append("## Where comex's time goes: fault breakdown (comex, loopback)\n")
    out.append("Counters from `comex run --stats-json` (median over runs); `ns_*` are the handler's time in each "
               "path; read/written are bytes moved to and from the memnodes, also as a multiple of the footprint "
               "(amplification). Result file `%s`.\n" % doc["_path"])
    out.append("| workload | limit | slowdown | zero | wbuf hit | rbuf hit | remote | prefetch-mapped | wp | evicted | "
               "read (x fp) | written (x fp) | remote time | µs / remote read | evict time | run time |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = sorted((s for s in doc["summary"] if s["mode"] == "comex"), key=lambda s: (s["workload"], -(s["fraction"] or 0)))
    bars = []
    for s in rows:
        cs = s.get("comex_stats_median")
        w = s["workload"]
        fp = doc["references"][w]["footprint_bytes"]
        if not cs:
            out.append("| %s | %d %% | %s | | | | | | | | | | | | | |" % (w, s["fraction"], cell(doc, s)))
            continue
        t = (s.get("time_s") or {}).get("median") or 0
        out.append("| %s | %d %% | %s | %d | %d | %d | %d | %d | %d | %d | %.0f MiB (%.1f) | %.0f MiB (%.1f) | %.1f s | %.0f | %.1f s | %.1f s |" % (
            w, s["fraction"], cell(doc, s), cs["faults_zero"], cs["faults_wbuf_hit"], cs["faults_rbuf_hit"],
            cs["faults_remote"], cs["pages_prefetch_mapped"], cs["faults_wp"], cs["pages_evicted"],
            cs["bytes_read"] / 2**20, cs["bytes_read"] / fp, cs["bytes_written"] / 2**20, cs["bytes_written"] / fp,
            cs["ns_remote"] / 1e9, cs["ns_remote"] / 1e3 / max(1, cs["faults_remote"]), cs["ns_evict"] / 1e9, t))
        bars.append((w, s["fraction"], cs, t))
    out.append("")
    if bars:
        fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(bars)) + 2.5, 4.2))
        x = range(len(bars))
        bottom = [0.0] * len(bars)
        for k, label in FAULT_KEYS:
            vals = []
            for (w, f, cs, t) in bars:
                tot = sum(cs[kk] for kk, _ in FAULT_KEYS) or 1
                vals.append(100.0 * cs[k] / tot)
            ax.bar(x, vals, 0.7, bottom=bottom, label=label)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_xticks(list(x))
        ax.set_xticklabels(["%s\n%d%%" % (w, f) for (w, f, _, _) in bars], fontsize=7)
        ax.set_ylabel("% of page arrivals")
        ax.set_title("comex page-fault activity per workload and limit (cf. COMEX Fig. 14)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        out.append(save_figure(plt, fig, "faults"))


def sec_sens(doc, out, plt):
    from .experiments import SENS
    out.append("## Sensitivity to T, P and B (comex at %d %%)\n" % (doc["metadata"]["options"].get("sens_fraction") or 25))
    out.append("Run time normalized to the default value of the parameter (median, min–max over runs). "
               "Result file `%s`.\n" % doc["_path"])
    params = [p for p in SENS if any(s.get("param") == p for s in doc["summary"])]
    if not params:
        return
    fig, axes = plt.subplots(1, len(params), figsize=(4.6 * len(params), 3.6), squeeze=False)
    for ax, p in zip(axes[0], params):
        flag, values, default = SENS[p]
        out.append("**%s** (`%s`, default %s)\n" % (p, flag, default))
        out.append("| workload | " + " | ".join(values) + " |")
        out.append("|---|" + "---|" * len(values))
        for w in sorted({s["workload"] for s in doc["summary"] if s.get("param") == p}):
            base = one(doc, workload=w, param=p, value=default)
            bm = (base or {}).get(metric(doc, w))
            row, ys, xs = [], [], []
            for i, v in enumerate(values):
                s = one(doc, workload=w, param=p, value=v)
                m = (s or {}).get(metric(doc, w))
                if m and bm:
                    r = m["median"] / bm["median"]
                    row.append("%.2f (%.2f–%.2f)%s" % (r, m["min"] / bm["median"], m["max"] / bm["median"],
                                                       " ⚠" if s.get("warn_spread") else ""))
                    xs.append(i)
                    ys.append(r)
                else:
                    row.append(cell(doc, s) if s else "—")
            out.append("| %s | %s |" % (w, " | ".join(row)))
            ax.plot(xs, ys, marker="o", label=w)
        out.append("")
        ax.set_xticks(range(len(values)))
        ax.set_xticklabels(values)
        ax.axhline(1, color="#999999", lw=0.8)
        ax.set_xlabel("%s (%s)" % (p, flag))
        ax.set_ylabel("time / time at %s=%s" % (p, default))
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    out.append(save_figure(plt, fig, "sensitivity", "comex sensitivity (cf. COMEX Figs 10-12)"))


def variant(s):
    """A summary's mode with the options it ran with: 'comex-rtt15 (--placement p2c)'."""
    return s["mode"] + (" (%s)" % " ".join(s["comex_opts"]) if s.get("comex_opts") else "")


def sec_multi(doc, out, plt):
    out.append("## Multi-tasking: k programs at once, each in its own cgroup at %d %% (shared memnodes / swap device)\n"
               % (doc["metadata"]["options"].get("mt_fraction") or 25))
    out.append("Mean completion time of the k instances relative to k instances run locally (unlimited) at the "
               "same time (the ratio takes out the CPU they share here); in brackets the slowest instance's against "
               "the slowest local one, and against its own k=1 ratio (the target: at most 1.3x). Result file `%s`.\n"
               % doc["_path"])
    ks = sorted({s["k"] for s in doc["summary"]})
    variants = sorted({variant(s) for s in doc["summary"] if s["mode"] != "local"},
                      key=lambda v: (MODE_ORDER.index(v.split()[0]) if v.split()[0] in MODE_ORDER else 50, v))
    for w in sorted({s["workload"] for s in doc["summary"]}):
        out.append("| %s | " % w + " | ".join("k=%d" % k for k in ks) + " |")
        out.append("|---|" + "---|" * len(ks))
        data = {}
        for v in variants:
            row = []
            for k in ks:
                s = next((x for x in summaries(doc, workload=w, k=k) if variant(x) == v), None)
                loc = one(doc, workload=w, mode="local", k=k)
                sm, lm = (s or {}).get(metric(doc, w)), (loc or {}).get(metric(doc, w))
                if sm and lm:
                    r = sm["median"] / lm["median"] if not hib(doc, w) else lm["median"] / sm["median"]
                    txt = "%.2fx%s" % (r, " ⚠" if s.get("warn_spread") else "")
                    worst, lworst = s.get("time_s_max"), (loc or {}).get("time_s_max")
                    if worst and lworst and not hib(doc, w):
                        rw = worst["median"] / lworst["median"]
                        alone = data.get(v, {}).get(ks[0])
                        txt += " (slowest %.2fx%s)" % (rw, ", %.2fx its k=1" % (rw / alone) if alone else "")
                    row.append(txt)
                    data.setdefault(v, {})[k] = r
                else:
                    row.append(cell(doc, s) if s else "—")
            out.append("| %s | %s |" % (v, " | ".join(row)))
        out.append("")
        fig, ax = plt.subplots(figsize=(7, 3.8))
        width = 0.8 / max(1, len(variants))
        for j, v in enumerate(variants):
            xs = [i + (j - len(variants) / 2 + 0.5) * width for i, k in enumerate(ks) if k in data.get(v, {})]
            ys = [data[v][k] for k in ks if k in data.get(v, {})]
            ax.bar(xs, ys, width, label=v, color=COLORS.get(v) or "C%d" % j)
        ax.set_xticks(range(len(ks)))
        ax.set_xticklabels(["k=%d" % k for k in ks])
        ax.set_ylabel("slowdown vs k local runs (log)")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
        ax.set_title("%s: k concurrent programs sharing two memnodes / one swap device (cf. COMEX Fig. 15)" % w,
                     fontsize=9)
        save_figure(plt, fig, "multitask")   # one per workload: the last one is shown
    out.append("![multitask](img/bench-multitask.png)\n")


def sec_replicas(doc, out, plt):
    out.append("## Replication's price: replicas 1, 2, 3\n")
    out.append("Every evicted page written to that many memnodes (docs/RELIABILITY.md), at %d %% local; slowdown "
               "against the unlimited local run, and what the runtime's counters say was written. Result file `%s`.\n"
               % (doc["metadata"]["options"].get("rep_fraction") or 25, doc["_path"]))
    out.append("| workload | mode | replicas | slowdown | vs replicas 1 | MiB written | remote writes |")
    out.append("|---|---|---|---|---|---|---|")
    for w in sorted({s["workload"] for s in doc["summary"]}):
        rows = sorted((s for s in summaries(doc, workload=w) if s["mode"] != "local"),
                      key=lambda s: int(s["comex_opts"][1]) if len(s["comex_opts"]) > 1 else 0)
        first = None
        for s in rows:
            m = s.get(metric(doc, w))
            st = s.get("comex_stats_median") or {}
            first = first or (m and m["median"])
            out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                w, s["mode"], s["comex_opts"][1] if len(s["comex_opts"]) > 1 else "?", cell(doc, s),
                "%.2fx" % (m["median"] / first) if m and first else "—",
                "%.0f" % (st["bytes_written"] / 2**20) if "bytes_written" in st else "—",
                "%d" % st["remote_writes"] if "remote_writes" in st else "—"))
    out.append("")


def rtt_of(mode):
    """N of comex-rttN[-nK], else None."""
    m = re.fullmatch(r"comex-rtt(\d+)(?:-n\d)?", mode)
    return int(m.group(1)) if m else None


def distance_model(doc, w, frac, rtts):
    """The fault-count model of the time at each round trip: the time
    measured at the nearest distance plus, per microsecond further, one
    microsecond for every remote read a fault waited for (remote_reads of
    that run): T(X) = T(X0) + reads x (X - X0). None without the counters."""
    base = one(doc, workload=w, mode="comex-rtt%d" % rtts[0], fraction=frac)
    m = (base or {}).get(metric(doc, w))
    st = (base or {}).get("comex_stats_median") or {}
    if not m or "remote_reads" not in st or hib(doc, w):
        return None
    return {x: m["median"] + st["remote_reads"] * (x - rtts[0]) * 1e-6 for x in rtts}


def median_of(doc, w, mode, frac):
    s = one(doc, workload=w, mode=mode, fraction=frac)
    m = (s or {}).get(metric(doc, w))
    return m["median"] if m else None


def distance_targets(doc, wls, fracs, out):
    """Issue 24's targets: at 3 us and 25 %, comex no slower than zram on
    every workload; at 15 us, at least 2x faster than swap-disk on every
    workload (each fraction run)."""
    lines = []
    for w in wls:
        c, z = median_of(doc, w, "comex-rtt3", 25), median_of(doc, w, "zram", 25)
        if c and z:
            r = c / z if not hib(doc, w) else z / c
            lines.append("- 3 µs, 25 %%, %s: comex %.2f against zram %.2f: %s" % (
                w, c, z, "met (%.2fx zram)" % r if r <= 1 else "**missed**: %.2fx zram's time" % r))
        for f in fracs:
            c, d = median_of(doc, w, "comex-rtt15", f), median_of(doc, w, "swap-disk", f)
            if c and d:
                r = d / c if not hib(doc, w) else c / d
                lines.append("- 15 µs, %d %%, %s: swap-disk %.2f against comex %.2f: %s" % (
                    f, w, d, c, "met (%.2fx faster)" % r if r >= 2 else "**missed**: only %.2fx faster" % r))
    if lines:
        out.append("Targets (issue 24), medians of the runs:\n")
        out.extend(lines)
        out.append("")


def sec_distance(doc, out, plt):
    modes = sorted({s["mode"] for s in doc["summary"] if s["mode"] != "local"},
                   key=lambda m: (rtt_of(m) is not None, rtt_of(m) or 0, MODE_ORDER.index(m) if m in MODE_ORDER else 99))
    rtts = [rtt_of(m) for m in modes if rtt_of(m) is not None]
    fracs = sorted({s["fraction"] for s in doc["summary"] if s["fraction"]}, reverse=True)
    wls = sorted({s["workload"] for s in doc["summary"]})
    out.append("## At network distances: comex-rttN, a simulated round trip of N µs over TCP between namespaces\n")
    out.append("Slowdown against the unlimited local run, median of %d runs (min–max). comex-rttN: two memnodes, "
               "each in a network namespace behind a veth pair shaped to 25 Gbit/s, with option `sim-rtt` N µs "
               "(every reply taken in N µs later than it came: a simulation of a longer link, checked against a "
               "ping-pong by `bench/distance.py`, section below); 3 µs is about RDMA, 15–30 µs TCP over 25 GbE. "
               "Result file `%s`.\n" % (doc["metadata"]["options"].get("runs", 3), doc["_path"]))
    for frac in fracs:
        out.append("### %d %% of the footprint local\n" % frac)
        out.append("| workload | " + " | ".join(modes) + " |")
        out.append("|---|" + "---|" * len(modes))
        for w in wls:
            out.append("| %s | %s |" % (w, " | ".join(
                cell(doc, s) if (s := one(doc, workload=w, mode=m, fraction=frac)) else "—" for m in modes)))
        out.append("")
    if not rtts:
        return
    distance_targets(doc, wls, fracs, out)
    out.append("The model (dashed in the plot): the time at %d µs plus one microsecond per remote read a fault "
               "waited for, per microsecond of extra round trip: T(X) = T(%d) + remote_reads × (X − %d µs). "
               "Predicted against measured:\n" % (rtts[0], rtts[0], rtts[0]))
    out.append("| workload | fraction | remote reads | " + " | ".join("%d µs: measured / model" % x for x in rtts[1:]) + " |")
    out.append("|---|---|---|" + "---|" * len(rtts[1:]))
    for frac in fracs:
        for w in wls:
            mod = distance_model(doc, w, frac, rtts)
            if not mod:
                continue
            st = one(doc, workload=w, mode="comex-rtt%d" % rtts[0], fraction=frac)["comex_stats_median"]
            row = []
            for x in rtts[1:]:
                s = one(doc, workload=w, mode="comex-rtt%d" % x, fraction=frac)
                m = (s or {}).get(metric(doc, w))
                row.append("%.2f s / %.2f s" % (m["median"], mod[x]) if m else "—")
            out.append("| %s | %d %% | %d | %s |" % (w, frac, st["remote_reads"], " | ".join(row)))
    out.append("")
    fig, axes = plt.subplots(1, len(fracs), figsize=(5.2 * len(fracs), 4), squeeze=False)
    for ax, frac in zip(axes[0], fracs):
        for i, w in enumerate(wls):
            color = "C%d" % i
            pts = [(x, slow(doc, w, s[metric(doc, w)]["median"])) for x in rtts
                   if (s := one(doc, workload=w, mode="comex-rtt%d" % x, fraction=frac)) and s.get(metric(doc, w))]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=color, label="%s comex" % w)
            mod = distance_model(doc, w, frac, rtts)
            if mod:
                ax.plot(rtts, [slow(doc, w, mod[x]) for x in rtts], "--", color=color, linewidth=0.8)
            for m, style in (("zram", ":"), ("swap-disk", "-.")):
                s = one(doc, workload=w, mode=m, fraction=frac)
                if s and s.get(metric(doc, w)):
                    y = slow(doc, w, s[metric(doc, w)]["median"])
                    ax.plot([rtts[0], rtts[-1]], [y, y], style, color=color, linewidth=1,
                            label="%s %s" % (w, m))
        ax.set_xlabel("simulated round trip (µs)")
        ax.set_ylabel("slowdown vs local (log)")
        ax.set_yscale("log")
        ax.set_title("%d %% local: comex (solid), model (dashed), zram (dotted), swap-disk (dash-dot)" % frac,
                     fontsize=8)
        ax.legend(fontsize=6, ncol=2)
    out.append(save_figure(plt, fig, "distance"))


def sec_tax(doc, out, plt):
    out.append("## Transparency tax: comex when the footprint fits\n")
    out.append("`comex run` with a budget of twice the footprint and no cgroup limit (nothing is evicted), "
               "against the local run: the cost of the interposed allocator, userfaultfd registration, "
               "first-touch zero-fill faults and start-up (connecting to two memnodes). Result file `%s`.\n"
               % doc["_path"])
    out.append("| workload | local | comex (fits) | tax | pages evicted |")
    out.append("|---|---|---|---|---|")
    names, vals = [], []
    for s in sorted(summaries(doc, mode="comex"), key=lambda s: s["workload"]):
        w = s["workload"]
        m = s.get(metric(doc, w))
        ref = doc["references"][w]["metric"]
        ev = (s.get("comex_stats_median") or {}).get("pages_evicted", "?")
        if m:
            r = slow(doc, w, m["median"])
            out.append("| %s | %s | %s | %s | %s |" % (w, fmt_metric(doc, w, ref), fmt_metric(doc, w, m["median"]),
                                                      cell(doc, s), ev))
            names.append(w)
            vals.append(r)
        else:
            out.append("| %s | %s | %s | | |" % (w, fmt_metric(doc, w, ref), cell(doc, s)))
    out.append("")
    if names:
        fig, ax = plt.subplots(figsize=(7, 3.4))
        ax.bar(names, vals, color=COLORS["comex"])
        ax.axhline(1, color="black", lw=0.8)
        ax.set_ylabel("comex / local (footprint fits)")
        ax.set_title("Transparency tax")
        out.append(save_figure(plt, fig, "tax"))


def newest_bench(name):
    """The newest bench/results/NAME-<stamp>.json, or None."""
    files = sorted(glob.glob(str(ROOT / "bench/results" / ("%s-[0-9]*.json" % name))))
    return (json.load(open(files[-1])), os.path.relpath(files[-1], ROOT)) if files else (None, None)


def swap_targets(doc, w, f, out):
    """The issue-22 targets of one workload and fraction, as words."""
    t = {m: cost(doc, w, one(doc, workload=w, mode=m, fraction=f)) for m in ("swap-disk", "zram", "comex-swap",
                                                                             "comex-swap+zswap")}
    words = []
    if t["swap-disk"] and t["comex-swap"]:
        r = t["swap-disk"] / t["comex-swap"]
        need = 1.5 if w == "rand" else 1.0
        words.append("disk/comex-swap %.2fx (%s%s)" % (r, "met" if r > need else "MISSED",
                                                      ", target 1.5x" if w == "rand" else ""))
    if t["zram"] and t["comex-swap+zswap"]:
        r = t["comex-swap+zswap"] / t["zram"]
        words.append("+zswap/zram %.2fx" % r)
    return "; ".join(words) or "—"


def swap_table(doc, out):
    """The swap modes' slowdowns per workload and limit with the targets,
    and what zswap took and passed on where it was in front."""
    modes = [m for m in modes_of(doc) if m != "local"]
    fracs = sorted({s["fraction"] for s in doc["summary"] if s["fraction"]}, reverse=True)
    out.append("| workload | limit | " + " | ".join(modes) + " | targets |")
    out.append("|---|---|" + "---|" * (len(modes) + 1))
    for w in sorted({s["workload"] for s in doc["summary"]}):
        for f in fracs:
            row = [why_missing(doc, one(doc, workload=w, mode=m, fraction=f)) for m in modes]
            out.append("| %s (%d MiB) | %d %% | %s | %s |" % (w, doc["references"][w]["footprint_bytes"] >> 20, f,
                                                            " | ".join(row), swap_targets(doc, w, f, out)))
    out.append("")
    zr = [s for s in doc["summary"] if s["mode"] == "comex-swap+zswap" and s.get("vmstat_median")]
    if zr:
        out.append("With zswap in front, per run (medians): pages that reached comex swap (`pswpout`), and where "
                   "the file has them, pages zswap took (`zswpout`), gave back (`zswpin`) and wrote back to comex "
                   "swap (`zswpwb`); `n/a`: the file predates their recording:\n")
        out.append("| workload | limit | pswpout | zswpout | zswpin | zswpwb |")
        out.append("|---|---|---|---|---|---|")
        for s in sorted(zr, key=lambda s: (s["workload"], -s["fraction"])):
            v = s["vmstat_median"]
            f = lambda k: "%d" % v[k] if k in v else "n/a"  # noqa: E731
            out.append("| %s | %d %% | %s | %s | %s | %s |" % (s["workload"], s["fraction"], f("pswpout"),
                                                              f("zswpout"), f("zswpin"), f("zswpwb")))
        out.append("")

def sec_swap(doc, out, plt):
    out.append("## comex swap: the kernel's swap on memnodes (issue 22)\n")
    out.append("`comex-swap` is Linux swap on `comex swap` with its embedded memnode (a FUSE file behind a loop "
               "device, the same host, as `comex-shm`); `comex-swap+zswap` has zswap (%s) in front. Every mode at "
               "the same cgroup limit; slowdown against the unlimited local run, median (min–max) of the runs; "
               "targets: comex-swap faster than swap-disk on every workload and 1.5x on `rand`, comex-swap+zswap no "
               "slower than zram where the data compresses. Result file `%s`.\n"
               % (doc.get("modes", {}).get("comex-swap+zswap", {}).get("zswap", {}).get("compressor", "?"),
                  doc["_path"]))
    swap_table(doc, out)
    lat, path = newest_bench("swap-latency")
    if lat:
        out.append("### Swap-in latency\n")
        out.append("`bench/swap_latency.py` (`%s`): `pager_bench --pattern rand` over %d MiB at %d %%, every touch "
                   "timed in the program (touches over 2 us are swap-ins), %d runs per device, interleaved; for "
                   "comex swap the layers of a 4 KiB read with the device attached (O_DIRECT reads of the loop "
                   "device and of the FUSE file, timed in Python, and the daemon's own time per request):\n"
                   % (path, lat["size_mib"], lat["fraction"], lat["runs"]))
        out.append("| device | access (s) | swap-in p50 (us) | swap-in p99 (us) | loop read p50 | FUSE file read p50 | "
                   "daemon p50 |")
        out.append("|---|---|---|---|---|---|---|")
        for n, v in lat["summary"].items():
            f = lambda k: "%.1f" % v[k] if v.get(k) is not None else "—"  # noqa: E731
            out.append("| %s%s | %.2f | %s | %s | %s | %s | %s |" % (n, "" if v["verified"] else " WRONG OUTPUT",
                                                                   v["access_s"], f("swapin_p50_us"),
                                                                   f("swapin_p99_us"), f("loop_read_p50_us"),
                                                                   f("fuse_file_read_p50_us"),
                                                                   f("daemon_read_p50_us")))
        out.append("")
    rec, path = newest_bench("swap-reclaim")
    if rec:
        out.append("### The whole machine in global reclaim\n")
        ok = sum(1 for r in rec["runs"] if r["ok"])
        out.append("`bench/swap_reclaim.py` (`%s`): %s for %.0f minutes: a balloon locked %d MiB, leaving %d MiB "
                   "for %d programs of %d MiB (`pager_bench` rand) run again and again; %d runs, %d with the right "
                   "checksum; the longest any task stayed in D state: %.1f s (%s); %d pages swapped out, %d in. "
                   "Target: no task in D state for 60 s, every output right.\n"
                   % (path, "**PASS**" if rec["pass"] else "**FAIL**", rec["minutes"], rec["balloon_mib"],
                      rec["free_mib"], rec["programs"], rec["program_mib"], len(rec["runs"]), ok,
                      rec["longest_d"]["s"], rec["longest_d"]["comm"], rec["vmstat"]["pswpout"],
                      rec["vmstat"]["pswpin"]))


def sec_warnings(docs, out):
    warns = []
    for name, doc in docs.items():
        for s in doc["summary"]:
            if s.get("warn_spread"):
                m = s[s["metric"]]
                warns.append("%s: %s %s%s%s: spread %.0f %% (%.3g–%.3g)" % (
                    name, s["workload"], s["mode"], " %d %%" % s["fraction"] if s["fraction"] else "",
                    " k=%d" % s["k"] if s["k"] > 1 else "" + (" %s=%s" % (s["param"], s["value"]) if s.get("param") else ""),
                    100 * m["spread"], m["min"], m["max"]))
            bad = [f for f in s["failed"] if f and "differs" in str(f)]
            if bad:
                warns.append("%s: %s %s: OUTPUT DIFFERS from the local run" % (name, s["workload"], s["mode"]))
    if warns:
        out.append("## Warnings\n")
        out.append("⚠ marks a configuration whose runs spread more than 10 % around their median.\n")
        for w in warns:
            out.append("- " + w)
        out.append("")


def sec_tiers(doc, out, plt):
    z = doc.get("modes", {}).get("comex-swap+zswap", {}).get("zswap", {})
    out.append("## zswap in front of comex swap, its pool capped (issue 22 item 5)\n")
    out.append("The compressed local tier before remote memory: zswap (%s, max_pool_percent %s of %d MiB RAM) in "
               "front of `comex swap`, so that what its pool cannot hold goes on to the memnode (`pswpout`); beside "
               "`comex swap` alone and zram. Same cgroup limits and runs as the section above. Result file `%s`.\n"
               % (z.get("compressor", "?"), z.get("max_pool_percent", "?"), doc["metadata"]["checked"]["mem_total_mib"],
                  doc["_path"]))
    swap_table(doc, out)


def note_other_machine(newest, d, out, first):
    """Under the heading a section wrote from out[first] on: the machine and
    build of its own file where they are not the report's."""
    diff = results.section_note(newest, d)
    if not diff:
        return
    at = next((i for i in range(first, len(out)) if out[i].startswith("## ")), first - 1) + 1
    out[at:at] = ["> **Measured on %s, not the machine or build above** (%s differ): %s. Compare the configurations "
                  "within this section; set against other sections its numbers are only indicative.\n"
                  % (d["metadata"].get("finished", "?")[:10], ", ".join(diff), meta_lines(d))]


def render():
    docs, newest, skipped = results.select(results.load_all())
    if not docs:
        log("report: no result files in bench/results")
        return
    plt = _plt()
    IMG.mkdir(parents=True, exist_ok=True)
    out = ["# comex evaluation results", "",
           "<!-- Generated by `python3 -m bench.harness report` from bench/results/eval-*.json; do not edit by hand. "
           "Method: docs/BENCH.md; decisions: docs/DECISIONS.md. -->", ""]
    out.append("Machine (of the newest result; a section measured on another says so): " + meta_lines(newest) + ".\n")
    modes = {}
    refused = {}
    for d in sorted(docs.values(), key=lambda d: d.get("timestamp", "")):  # the newest description wins
        modes.update(d.get("modes", {}))
        refused.update(d.get("refused_modes", {}))
    out.append("Modes (every one under the same cgroup memory limit, except local):\n")
    for m in MODE_ORDER:
        if m in modes:
            out.append("- **%s**: %s" % (m, describe_mode(modes[m])))
        elif m in refused:
            out.append("- **%s**: REFUSED — %s" % (m, refused[m]))
    out.append("")
    out.append("Workloads (footprint = peak RSS of the unlimited local run, given per experiment below with the "
               "exact command lines in the result files; every run's output is checked against the local run's):\n")
    wl = {}
    for d in docs.values():
        for w, p in d.get("workloads", {}).items():
            wl.setdefault(w, (p, d["references"].get(w)))
    for w, (p, ref) in sorted(wl.items()):
        out.append("- **%s** — %s" % (w, p.get("description", "")))
    out.append("")
    if NOTES.exists():
        out.append(NOTES.read_text().strip())
        out.append("")
    sec_targets(docs, out)
    order = [("sweep", sec_sweep), ("swap", sec_swap), ("tiers", sec_tiers), ("distance", sec_distance), ("busy", sec_busy), ("faults", sec_faults),
             ("sensitivity", sec_sens), ("multitask", sec_multi), ("replicas", sec_replicas), ("tax", sec_tax)]
    for name, fn in order:
        if name in docs:
            d = docs[name]
            d["summary"] = results.summarize(d["records"], lambda w, d=d: metric(d, w))
            first = len(out)
            fn(d, out, plt)
            note_other_machine(newest, d, out, first)
    sec_warnings(docs, out)
    if skipped:
        out.append("## Result files not shown\n")
        for p, why in skipped:
            out.append("- `%s`: %s" % (p, why))
        out.append("")
    out.append("Load average (1 min) before each experiment: " + ", ".join(
        "%s %.1f" % (n, d["metadata"]["load_before"][0]) for n, d in docs.items()) +
        ". docs/BENCH.md says which runs shared the machine with other work.\n")
    DOC.write_text("\n".join(out) + "\n")
    log("report: %s and %s/bench-*.png" % (DOC.relative_to(ROOT), IMG.relative_to(ROOT)))



def local_mem_text(d):
    """How a comex mode's budget was set: --local-mem auto following the
    cgroup (docs/DECISIONS.md D49), or the fixed headroom of result files from
    before it."""
    if "local_mem" in d:
        return "--local-mem " + d["local_mem"]
    return "--local-mem = M − max(12 MiB, min(64 MiB, M/8)), fixed"

def describe_mode(d):
    n = d.get("name")
    if n == "local":
        return "no memory limit"
    if n == "swap-disk":
        return "Linux swap on a %d MiB swap file on the local disk (%s)" % (d.get("size_mib", 0), d.get("fs", "?"))
    if n == "zram":
        return "Linux swap on %s, %d MiB, %s" % (d.get("dev"), d.get("size_mib", 0), d.get("comp_algorithm"))
    if n in SWAP_MODES:
        z = d.get("zswap")
        return ("Linux swap on comex swap, %s MiB (%s), the daemon and its memnode outside the cgroup%s"
                % (d.get("size_mib"), d.get("swap"), "; zswap in front: %s" % ", ".join("%s=%s" % kv for kv in
                                                                                      z.items()) if z else ""))
    spin = ""
    if d.get("spin") and d["spin"]["run"]:
        spin = "; no busy-polling (memnode %s, comex run %s)" % (
            " ".join("%s=%s" % kv for kv in d["spin"]["memnode"].items()), " ".join(d["spin"]["run"]))
    elif d.get("spin"):
        spin = "; comex's busy-polling defaults (--spin on)"
    if d.get("memnodes") == "embedded":
        return ("comex run with its embedded memnode (no --memnode; %s), %s, comex run and its memnode outside "
                "the cgroup, only the program in it (%s)%s"
                % (d.get("pool"), d.get("transport"), local_mem_text(d), spin))
    transport = d.get("transport", "UCX over TCP")  # result files from before comex's own TCP name none
    txt = ("comex run (%s), swap off for the cgroup; " % local_mem_text(d) +
           "%d memnodes (pool %d MiB each, fresh per run) outside the cgroup, %s, "
           % (d.get("memnodes", 2), d.get("pool_mib", 0), transport))
    net = d.get("network")
    if isinstance(net, list) and net:
        txt += ("each memnode in its own network namespace, its veth pair on bridge %s; tbf %d Gbit/s on both ends "
                "of every veth" % (net[0]["bridge"], net[0]["rate_gbit"]))
        if transport == "UCX over TCP":
            txt += "; UCX_TLS=tcp, UCX_NET_DEVICES = bridge / veth"
    else:
        txt += "on loopback"
    if d.get("sim_rtt_us"):
        txt += "; SIMULATED distance: option sim-rtt %d us (every reply taken in that much later)" % d["sim_rtt_us"]
    return txt + spin


def demo_table(doc):
    refs = doc.get("references", {})
    rows = []
    for s in sorted(doc["summary"], key=lambda s: (s["workload"], -(s["fraction"] or 101),
                                                     MODE_ORDER.index(s["mode"]) if s["mode"] in MODE_ORDER else 9)):
        m = s["metric"]
        v = s.get(m)
        ref = refs.get(s["workload"], {}).get("metric")
        lim = "%d%%" % s["fraction"] if s["fraction"] else "-"
        if v and ref:
            h = m.endswith("rps")
            rel = (ref / v["median"]) if h else (v["median"] / ref)
            val = "%.0f ops/s" % v["median"] if h else "%.2f s" % v["median"]
            chk = "verified" if s["verified_runs"] == s["runs"] else "FAILED: %s" % "; ".join(map(str, s["failed"]))[:60]
            rows.append("%-8s %-12s %5s  %14s  %7.2fx  %s" % (s["workload"], s["mode"], lim, val, rel, chk))
        else:
            rows.append("%-8s %-12s %5s  %14s  %8s  %s" % (s["workload"], s["mode"], lim, "-", "-",
                                                           "; ".join(map(str, s["failed"]))[:70]))
    return "\n".join(["%-8s %-12s %5s  %14s  %8s  %s" % ("workload", "mode", "limit", "result", "vs local", "check")] + rows)
