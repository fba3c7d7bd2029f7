"""The experiments (each one command):

  sweep       every mode at 100/75/50/25/10 % of the footprint (seed 000 Fig. 13, seed 001 Figs 1/10)
  faults      comex's fault breakdown per workload at 50/25/10 % (seed 000 Fig. 14)
  sensitivity comex at 25 % with T, P and B varied one at a time (seed 000 Figs 10-12)
  multitask   k = 1, 2, 4 programs at once, each in its own cgroup at 25 %, sharing two memnodes
              or the swap device (seed 000 Fig. 15)
  tax         comex with a budget twice the footprint (nothing evicted) against local
  all         all of the above
  smoke       every mode once at a tiny size, outputs verified (tests/e2e_bench_smoke.sh)
  busy        the 25 % runs again beside a CPU-bound neighbour on every core (stress-ng --cpu N, plain and
              at nice 19) and without, with local beside the same neighbour as the reference
  demo        one real program: local, swap-disk, zram, comex at 25 % (scripts/demo_compare.sh)"""

from .modes import ALL_MODES
from .sysenv import Refused, log

FRACTIONS = [100, 75, 50, 25, 10]
SENS = {
    "T": ("--replenish-threshold", ["16", "128", "1024", "8192", "auto"], "1024"),
    "P": ("--prefetch", ["1", "4", "8", "16", "32", "64"], "16"),
    "B": ("--rbuf-pages", ["256", "1024", "4096", "8192"], "4096"),
}


def _interleaved(sess, plan):
    """plan: list of (workload, mode, fraction, kwargs); runs them --runs
    times, repetitions interleaved (rep 1 of everything, then rep 2...), so
    a change of machine speed hits every mode alike. A mode that times out
    at one fraction is not run at smaller ones in that repetition (they can
    only be slower); one that failed otherwise (e.g. OOM-killed) is."""
    dead = set()
    for rep in range(sess.args.runs):
        for (w, mname, frac, kw) in plan:
            key = (w, mname, tuple(kw.get("comex_opts") or ()), kw.get("k", 1), kw.get("neighbour"), rep)
            if key in dead:
                sess.records.append({"experiment": sess.experiment, "workload": w, "mode": mname, "fraction": frac,
                                     "rep": rep, "k": kw.get("k", 1), "comex_opts": kw.get("comex_opts") or [],
                                     "neighbour": kw.get("neighbour", "none"),
                                     "ok": False, "verified": False, "skipped": "timed out at a larger fraction"})
                sess.progress("%s %s %s%%: skipped (timed out at a larger fraction)" % (w, mname, frac))
                continue
            rec = sess.run(w, mname, frac, rep, **kw)
            if not rec["ok"] and any(i and i.get("timed_out") for i in rec.get("instances") or []):
                dead.add(key)


def _refs(sess, workloads):
    out = []
    for w in workloads:
        try:
            sess.reference(w)
            out.append(w)
        except Refused as e:
            log("workload %s skipped: %s" % (w, e))
            sess.records.append({"experiment": sess.experiment, "workload": w, "ok": False, "refused": str(e)})
    return out


def _provision(sess, workloads, kmax=1):
    # footprints are only known after the local runs: do those first
    fps = [sess.refs[(w, sess.workload(w).size)]["footprint_bytes"] for w in workloads]
    sess.provision(max(fps) if fps else 64 << 20, kmax)


def sweep(sess):
    a = sess.args
    wls = _refs(sess, a.workloads)
    _provision(sess, wls)
    modes = [m for m in a.modes if m != "local"]
    plan = [(w, m, f, {}) for w in wls for f in a.fractions for m in modes]
    sess.planned += len(plan) * a.runs
    _interleaved(sess, plan)


def faults(sess):
    a = sess.args
    wls = _refs(sess, a.workloads)
    _provision(sess, wls)
    plan = [(w, "comex", f, {}) for w in wls for f in a.fault_fractions]
    sess.planned += len(plan) * a.runs
    _interleaved(sess, plan)


def sensitivity(sess):
    a = sess.args
    wls = _refs(sess, a.sens_workloads)
    _provision(sess, wls)
    plan = []
    for p in a.params:
        flag, values, default = SENS[p]
        for w in wls:
            for v in values:
                plan.append((w, "comex", a.sens_fraction, {"comex_opts": [flag, v], "extra": {"param": p, "value": v}}))
    sess.planned += len(plan) * a.runs
    _interleaved(sess, plan)


def multitask(sess):
    a = sess.args
    wls = _refs(sess, a.mt_workloads)
    _provision(sess, wls, kmax=max(a.ks))
    plan = [(w, m, (a.mt_fraction if m != "local" else None), {"k": k})
            for w in wls for k in a.ks for m in a.mt_modes]
    sess.planned += len(plan) * a.runs
    _interleaved(sess, plan)


def tax(sess):
    a = sess.args
    wls = _refs(sess, a.workloads)
    _provision(sess, wls)
    plan = []
    for w in wls:
        fp = sess.refs[(w, sess.workload(w).size)]["footprint_bytes"]
        lm = "%dM" % max(64, 2 * fp >> 20)
        plan.append((w, "comex", None, {"comex_local_mem": lm, "extra": {"comex_local_mem": lm}}))
    sess.planned += len(plan) * a.runs
    _interleaved(sess, plan)


def busy(sess):
    """Slowdown growth beside a CPU-bound neighbour: every mode of
    --busy-modes at --busy-fraction, and local (unlimited) as the reference,
    once per neighbour of --neighbours (none, stress, stress-nice); the
    harness starts the neighbour for each run and stops it afterwards."""
    a = sess.args
    wls = _refs(sess, a.workloads)
    _provision(sess, wls)
    plan = [(w, m, (a.busy_fraction if m != "local" else None), {"neighbour": nb})
            for w in wls for nb in a.neighbours for m in a.busy_modes]
    sess.planned += len(plan) * a.runs
    _interleaved(sess, plan)


def smoke(sess):
    """Every mode once at a tiny size; the caller checks every record verified."""
    a = sess.args
    wls = _refs(sess, a.workloads)
    _provision(sess, wls)
    plan = []
    for i, w in enumerate(wls):
        for m in a.modes:
            if m == "local":
                continue
            plan.append((w, m, a.fractions[0], {}))
    sess.planned += len(plan)
    for (w, m, f, kw) in plan:
        sess.run(w, m, f, 0, **kw)


def demo(sess):
    a = sess.args
    wls = _refs(sess, a.workloads)
    _provision(sess, wls)
    plan = [(w, m, 25, {}) for w in wls for m in a.modes if m != "local"]
    sess.planned += len(plan) * a.runs
    _interleaved(sess, plan)


EXPERIMENTS = {"sweep": sweep, "faults": faults, "sensitivity": sensitivity, "multitask": multitask, "tax": tax,
               "busy": busy, "smoke": smoke, "demo": demo}
