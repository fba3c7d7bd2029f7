"""The experiments (each one command):

  sweep       every mode at 100/75/50/25/10 % of the footprint (seed 000 Fig. 13, seed 001 Figs 1/10)
  swap        comex-swap and comex-swap+zswap at 50 and 25 % beside swap-disk, zram and comex-shm (issue 22)
  tiers       zram, comex-swap and comex-swap+zswap with zswap's pool capped at 1 % of RAM (issue 22 item 5)
  distance    the sweep with comex-rtt3/15/30 (simulated round trips) beside comex-shm, swap-disk, zram
  faults      comex's fault breakdown per workload at 50/25/10 % (seed 000 Fig. 14)
  sensitivity comex at 25 % with T, P and B varied one at a time (seed 000 Figs 10-12); S (sched)
              and W (write-fill) when named, optionally beside a --sens-neighbour
  multitask   k = 1, 2, 4 programs at once, each in its own cgroup at 25 %, sharing two memnodes
              or the swap device (seed 000 Fig. 15)
  replicas    --rep-mode with replicas 1, 2, 3 (time, bytes written)
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
    # not in the default --params: named (--params S,W) for the harness's take
    # on bench/sched.py's questions (sched D36, write-fill D26), beside a
    # neighbour with --sens-neighbour
    "S": ("--sched", ["normal", "slice", "fifo"], "normal"),
    "W": ("--write-fill", ["true", "false"], "true"),
}


def _interleaved(sess, plan, reps):
    """plan: list of (workload, mode, fraction, kwargs); runs them reps
    times, repetitions interleaved (rep 1 of everything, then rep 2...), so
    a change of machine speed hits every mode alike. A mode that times out
    at one fraction is not run at smaller ones in that repetition (they can
    only be slower); one that failed otherwise (e.g. OOM-killed) is."""
    dead = set()
    for rep in range(reps):
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


def _experiment(sess, workloads, plan_of, kmax=1, reps=None):
    """What every experiment does: the local reference runs of workloads
    (a refused one is skipped), the machine provisioned for the largest
    footprint and kmax programs at once, then plan_of(the workloads left)
    run reps times (default --runs), interleaved."""
    wls = _refs(sess, workloads)
    _provision(sess, wls, kmax)
    plan = plan_of(wls)
    reps = sess.args.runs if reps is None else reps
    sess.planned += len(plan) * reps
    _interleaved(sess, plan, reps)


def sweep(sess):
    a = sess.args
    modes = [m for m in a.modes if m != "local"]
    _experiment(sess, a.workloads, lambda wls: [(w, m, f, {}) for w in wls for f in a.fractions for m in modes])


def swap(sess):
    """comex swap beside the kernel's other swaps and comex run: --swap-modes
    at --swap-fractions (issue 22; docs/DECISIONS.md D68, D74)."""
    a = sess.args
    modes = [m for m in a.swap_modes if m != "local"]
    _experiment(sess, a.workloads, lambda wls: [(w, m, f, {}) for w in wls for f in a.swap_fractions for m in modes])


def tiers(sess):
    """zswap in front of comex swap as the compressed local tier: --tier-modes
    at --swap-fractions with zswap's pool capped (--zswap-pool-percent, 1 %
    of RAM: 241 MiB here), so that what does not fit goes on to the device
    behind it (issue 22 item 5; docs/DECISIONS.md D61)."""
    a = sess.args
    modes = [m for m in a.tier_modes if m != "local"]
    _experiment(sess, a.workloads, lambda wls: [(w, m, f, {}) for w in wls for f in a.swap_fractions for m in modes])


def distance(sess):
    """The sweep at network distances: --distance-modes (comex-rttN: a
    simulated round trip of N us over netns and TCP, beside the same-host
    and swap modes) at --fractions, for the distance plot and its model."""
    a = sess.args
    _experiment(sess, a.workloads, lambda wls: [(w, m, f, {}) for w in wls for f in a.fractions
                                                for m in a.distance_modes])


def faults(sess):
    a = sess.args
    _experiment(sess, a.workloads, lambda wls: [(w, "comex", f, {}) for w in wls for f in a.fault_fractions])


def sensitivity(sess):
    a = sess.args

    def plan_of(wls):
        plan = []
        for p in a.params:
            flag, values, default = SENS[p]
            for w in wls:
                for v in values:
                    plan.append((w, "comex", a.sens_fraction,
                                 {"comex_opts": [flag, v], "extra": {"param": p, "value": v},
                                  "neighbour": a.sens_neighbour}))
        return plan
    _experiment(sess, a.sens_workloads, plan_of)


def multitask(sess):
    """k programs at once; comex modes once per placement of
    --mt-placements (default: the placement option's default)."""
    a = sess.args

    def variants(m):
        if not m.startswith("comex") or not a.mt_placements:
            return [{}]
        return [{"comex_opts": ["--placement", p], "extra": {"placement": p}} for p in a.mt_placements]
    _experiment(sess, a.mt_workloads, lambda wls: [(w, m, (a.mt_fraction if m != "local" else None), dict(v, k=k))
                                                   for w in wls for k in a.ks for m in a.mt_modes
                                                   for v in variants(m)],
                kmax=max(a.ks))


def replicas(sess):
    """Replication's price: --rep-mode (enough memnodes for the most
    copies) at --rep-fraction with replicas 1, 2, 3; time, and bytes written
    from the runtime's counters."""
    a = sess.args
    _experiment(sess, a.rep_workloads, lambda wls: [(w, a.rep_mode, a.rep_fraction,
                                                     {"comex_opts": ["--replicas", str(r)], "extra": {"replicas": r}})
                                                    for w in wls for r in a.replica_counts])


def tax(sess):
    def plan_of(wls):
        plan = []
        for w in wls:
            fp = sess.refs[(w, sess.workload(w).size)]["footprint_bytes"]
            lm = "%dM" % max(64, 2 * fp >> 20)
            plan.append((w, "comex", None, {"comex_local_mem": lm, "extra": {"comex_local_mem": lm}}))
        return plan
    _experiment(sess, sess.args.workloads, plan_of)


def busy(sess):
    """Slowdown growth beside a CPU-bound neighbour: every mode of
    --busy-modes at --busy-fraction, and local (unlimited) as the reference,
    once per neighbour of --neighbours (none, stress, stress-nice); the
    harness starts the neighbour for each run and stops it afterwards."""
    a = sess.args
    _experiment(sess, a.workloads, lambda wls: [(w, m, (a.busy_fraction if m != "local" else None),
                                                 {"neighbour": nb})
                                                for w in wls for nb in a.neighbours for m in a.busy_modes])


def smoke(sess):
    """Every mode once at a tiny size; the caller checks every record verified."""
    a = sess.args
    _experiment(sess, a.workloads, lambda wls: [(w, m, a.fractions[0], {}) for w in wls for m in a.modes
                                                if m != "local"], reps=1)


def demo(sess):
    a = sess.args
    _experiment(sess, a.workloads, lambda wls: [(w, m, 25, {}) for w in wls for m in a.modes if m != "local"])


EXPERIMENTS = {"sweep": sweep, "swap": swap, "tiers": tiers, "faults": faults, "sensitivity": sensitivity, "multitask": multitask, "tax": tax,
               "replicas": replicas, "distance": distance,
               "busy": busy, "smoke": smoke, "demo": demo}
