"""python3 -m bench.harness EXPERIMENT [options]

Experiments: sweep, faults, sensitivity, multitask, tax, busy, all (each of
those, one result file each), smoke, demo; report (plots and docs/RESULTS.md from
bench/results), cleanup (what a killed harness left behind).

Run from the repository root as root. Examples:
  python3 -m bench.harness sweep --workloads python,redis --runs 3
  python3 -m bench.harness all --build /tmp/b            # the full evaluation
  python3 -m bench.harness smoke --quick                 # every mode once, tiny
  python3 -m bench.harness busy --workloads seq --size 512  # 25 % beside stress-ng, and without
  python3 -m bench.harness report                        # re-render plots + docs/RESULTS.md
"""

import argparse
import os
import sys
import time

# matplotlib/numpy come from Debian packages (python3-matplotlib, python3-numpy):
# re-run under the system interpreter when this one (e.g. pyenv's) lacks them.
if os.environ.get("COMEX_BENCH_REEXEC") != "1" and os.path.exists("/usr/bin/python3") \
        and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
    try:
        import matplotlib  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        os.environ["COMEX_BENCH_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3", "-m", "bench.harness"] + sys.argv[1:])

from . import experiments, results, sysenv  # noqa: E402
from .modes import ALL_MODES, is_mode  # noqa: E402
from .session import Session, fmt_dur  # noqa: E402
from .sysenv import log  # noqa: E402
from .workloads import ALL_WORKLOADS  # noqa: E402

# Target footprints (MiB) of the full run, sized so that the whole `all`
# fits in about 50 minutes on a 2-core VM (docs/BENCH.md); --size overrides.
FULL_SIZES = {"python": 96, "numpy": 128, "sqlite": 96, "sort": 128, "mt": 128, "redis": 96, "seq": 128,
              "rand": 128, "go": 128}
QUICK_SIZES = {w: 24 for w in ALL_WORKLOADS}
QUICK_SIZES.update(python=32, numpy=48, redis=32)


def csv(s):
    return [x for x in s.split(",") if x]


def ints(s):
    return [int(x) for x in csv(s)]


def parse(argv):
    p = argparse.ArgumentParser(prog="python3 -m bench.harness", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", choices=["sweep", "swap", "tiers", "faults", "sensitivity", "multitask", "tax", "busy", "replicas", "distance",
                                          "all", "smoke", "demo", "report", "cleanup"])
    p.add_argument("--build", default="build", help="build directory with comex, libcomex-rt.so, progs/, pager_bench")
    p.add_argument("--size", type=int, help="footprint in MiB of every workload (default: per workload, see --help)")
    p.add_argument("--sweep-sizes", "--sizes", dest="size_map", type=lambda x: {k: int(v) for k, v in (i.split("=") for i in csv(x))},
                   help="per-workload footprints in MiB, e.g. python=64,redis=48")
    p.add_argument("--runs", type=int, default=3, help="repetitions of every configuration (median, min, max)")
    p.add_argument("--quick", action="store_true", help="tiny sizes, 1 run, fewer points: a smoke run in minutes")
    p.add_argument("--workloads", type=csv, help="comma list (default: all): %s" % ",".join(ALL_WORKLOADS))
    p.add_argument("--modes", type=csv, help="comma list (default: all): %s; and comex-rttN[-nK] (a simulated "
                   "round trip of N us over netns, K memnodes; only when named)" % ",".join(ALL_MODES))
    p.add_argument("--fractions", type=ints, help="local memory in %% of the footprint (default 100,75,50,25,10)")
    p.add_argument("--fault-fractions", type=ints, default=[50, 25, 10])
    p.add_argument("--sens-workloads", type=csv, default=["rand", "python"])
    p.add_argument("--sens-fraction", type=int, default=25)
    p.add_argument("--params", type=csv, default=["T", "P", "B"],
                   help="sensitivity parameters (default T,P,B; also S: sched, W: write-fill)")
    p.add_argument("--sens-neighbour", default="none", help="sensitivity: the runs beside this --neighbours kind")
    p.add_argument("--ks", type=ints, default=[1, 2, 4], help="multitask: programs at once")
    p.add_argument("--mt-workloads", type=csv, default=["rand"])
    p.add_argument("--mt-modes", type=csv, default=["local", "swap-disk", "zram", "comex"])
    p.add_argument("--mt-fraction", type=int, default=25)
    p.add_argument("--mt-placements", type=csv, default=[],
                   help="multitask: run comex modes once per placement (hash, p2c, weighted; default: the option's default)")
    p.add_argument("--distance-modes", type=csv,
                   default=["comex-shm", "swap-disk", "zram", "comex-rtt3", "comex-rtt15", "comex-rtt30"],
                   help="distance: the modes beside local")
    p.add_argument("--rep-mode", default="comex-rtt15-n3", help="replicas: the comex mode (3 memnodes for replicas 3)")
    p.add_argument("--rep-workloads", type=csv, default=["rand"])
    p.add_argument("--rep-fraction", type=int, default=25)
    p.add_argument("--replica-counts", type=ints, default=[1, 2, 3])
    p.add_argument("--swap-modes", type=csv, default=["swap-disk", "zram", "comex-shm", "comex-swap", "comex-swap+zswap"],
                   help="swap: the modes beside local")
    p.add_argument("--swap-fractions", type=ints, default=[50, 25])
    p.add_argument("--tier-modes", type=csv, default=["zram", "comex-swap", "comex-swap+zswap"],
                   help="tiers: the modes beside local (swap's, with zswap's pool capped)")
    p.add_argument("--zswap-pool-percent", type=int,
                   help="zswap's max_pool_percent in the +zswap modes (default: 1 for tiers, so that pages reach the "
                        "device behind it; 20, the kernel's default, otherwise)")
    p.add_argument("--busy-modes", type=csv, default=["local", "comex-shm", "swap-disk", "zram"],
                   help="busy: modes run beside each neighbour (local is the reference)")
    p.add_argument("--neighbours", type=csv, default=list(sysenv.NEIGHBOURS),
                   help="busy: %s (none: no neighbour; stress-1: stress-ng --cpu 1; stress: stress-ng --cpu <cores>; stress-nice: the same "
                        "under nice -n 19)" % ",".join(sysenv.NEIGHBOURS))
    p.add_argument("--busy-fraction", type=int, default=25)
    p.add_argument("--spin", choices=["on", "off"], default="on",
                   help="comex's busy-polling: on (default: comex's own defaults, what `comex run` and `comex "
                        "memnode` do unless told otherwise) or off (idle-spin, handler-spin, client-spin 0; "
                        "docs/DECISIONS.md D71)")
    p.add_argument("--timeout", type=float, default=900, help="hard limit of one run (s)")
    p.add_argument("--timeout-factor", type=float, default=40,
                   help="a run slower than this many times its local run is stopped (and smaller fractions skipped)")
    p.add_argument("--min-timeout", type=float, default=60)
    p.add_argument("--no-report", action="store_true", help="do not re-render plots and docs/RESULTS.md")
    p.add_argument("--no-save", action="store_true", help="do not write a result file (smoke tests)")
    p.add_argument("--sweep-workloads", type=csv, help="all: workloads of the sweep (default: --workloads)")
    a = p.parse_args(argv)
    a.sizes = dict(QUICK_SIZES if a.quick else FULL_SIZES)
    a.sizes.update(a.size_map or {})
    if a.quick and "--runs" not in " ".join(argv):
        a.runs = 1
    a.workloads = a.workloads or list(ALL_WORKLOADS)
    a.modes = a.modes or list(ALL_MODES)
    if "local" not in a.modes:
        a.modes = ["local"] + a.modes
    if a.experiment == "smoke" and not a.fractions:
        a.fractions = [90]   # lower limits make the kernel OOM-kill swap runs now and then (docs/BENCH.md)
    a.fractions = a.fractions or ([50, 10] if a.quick else list(experiments.FRACTIONS))
    if a.quick:
        a.fault_fractions = [25]
    for w in a.workloads + a.sens_workloads + a.mt_workloads + a.rep_workloads:
        if w not in ALL_WORKLOADS:
            p.error("unknown workload %s (known: %s)" % (w, ", ".join(ALL_WORKLOADS)))
    if "local" not in a.busy_modes:
        a.busy_modes = ["local"] + a.busy_modes
    for nb in a.neighbours:
        if nb not in sysenv.NEIGHBOURS:
            p.error("unknown neighbour %s (known: %s)" % (nb, ", ".join(sysenv.NEIGHBOURS)))
    if a.zswap_pool_percent is None:
        a.zswap_pool_percent = 1 if a.experiment == "tiers" else 20
    if not 1 <= a.zswap_pool_percent <= 100:
        p.error("--zswap-pool-percent must be 1..100")
    sysenv.Zswap.WANT["max_pool_percent"] = str(a.zswap_pool_percent)
    for m in a.modes + a.swap_modes + a.tier_modes + a.mt_modes + a.busy_modes + a.distance_modes + [a.rep_mode]:
        if not is_mode(m):
            p.error("unknown mode %s (known: %s)" % (m, ", ".join(ALL_MODES)))
    for x in a.params:
        if x not in experiments.SENS:
            p.error("unknown parameter %s (%s)" % (x, ", ".join(experiments.SENS)))
    if a.sens_neighbour not in sysenv.NEIGHBOURS:
        p.error("unknown neighbour %s (known: %s)" % (a.sens_neighbour, ", ".join(sysenv.NEIGHBOURS)))
    return a


def main(argv):
    a = parse(argv)
    if a.experiment == "cleanup":
        sysenv.cleanup_leftovers()
        return 0
    if a.experiment == "report":
        from . import report
        report.render()
        return 0
    if os.geteuid() != 0:
        log("the harness needs root (cgroups, swap, zram, network namespaces)")
        return 77
    sysenv.install_signal_handlers()
    names = ["sweep", "faults", "sensitivity", "multitask", "tax", "busy"] if a.experiment == "all" \
        else [a.experiment]
    t0 = time.monotonic()
    rc = 0
    docs = []
    sess = None
    try:
        sess = Session(a, names[0])
        for name in names:
            sess.experiment = name
            log("== %s" % name)
            wl = a.workloads
            if name == "sweep" and a.sweep_workloads:
                a.workloads, wl = a.sweep_workloads, a.workloads
            try:
                experiments.EXPERIMENTS[name](sess)
            finally:
                a.workloads = wl
            doc, path = results.write(sess)
            docs.append(doc)
    except KeyboardInterrupt:
        log("interrupted: restoring the machine")
        rc = 130
    finally:
        sysenv.UNDO.run_all()
    if rc == 0 and not a.no_report and a.experiment not in ("smoke", "demo"):
        from . import report
        report.render()
    if a.experiment in ("smoke", "demo"):
        from . import report
        print(report.demo_table(docs[-1]) if docs else "")
        if a.experiment == "smoke" and docs and rc == 0:
            bad, skipped, ran = smoke_failures(docs[-1])
            for b in skipped:
                print("SKIP: %s" % b)
            for b in bad:
                print("FAIL: %s" % b)
            if bad:
                rc = 1
            elif not ran:
                print("smoke: no mode could run here")
                rc = 77
            else:
                print("smoke: %d runs in %d modes ran and verified%s" % (
                    ran, len({r["mode"] for r in docs[-1]["records"] if r.get("ok") and r["mode"] != "local"}),
                    "; %d refused (preconditions)" % len(skipped) if skipped else ""))
    log("done in %s" % fmt_dur(time.monotonic() - t0))
    return rc


def smoke_failures(doc):
    """(failures, refusals, runs that verified) of a smoke result."""
    bad, skipped, ran = [], [], 0
    for r in doc["records"]:
        if "mode" not in r:
            skipped.append("%s: workload refused: %s" % (r.get("workload"), r.get("refused")))
            continue
        what = "%s in %s" % (r["workload"], r["mode"])
        if r.get("refused"):
            skipped.append("%s: refused: %s" % (what, r["refused"]))
        elif not r.get("ok"):
            bad.append("%s: %s" % (what, r.get("error") or r.get("skipped")))
        elif not r.get("verified"):
            bad.append("%s: output differs from the local run" % what)
        elif r["mode"] != "local":
            ran += 1
    return bad, skipped, ran


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
