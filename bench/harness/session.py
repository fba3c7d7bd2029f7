"""A benchmark session: the modes it has set up, the local references of the
workloads (footprint, expected check, local metric), and the run records."""

import json
import math
import os
import shutil
import statistics
import tempfile
import threading
import time

from . import results, sysenv
from .sysenv import benchlib
from .modes import make_mode
from .sysenv import Refused, log
from .workloads import WORKLOADS

MIB = 1 << 20
PAGE = 4096


class Session:
    def __init__(self, args, experiment):
        self.args = args
        self.build = os.path.abspath(args.build)
        self.experiment = experiment
        self.workdir = tempfile.mkdtemp(prefix="%s-" % sysenv.TAG, dir="/var/tmp")
        sysenv.UNDO.push("workdir %s" % self.workdir, lambda: shutil.rmtree(self.workdir, ignore_errors=True))
        self.modes = {}
        self.refused = {}
        self.refs = {}
        self.records = []
        self.workloads = {}
        self.done = 0
        self.planned = 0
        self.t_start = time.monotonic()
        self.pool = None
        self.swap = None
        self.meta = sysenv.metadata(self.build, {k: v for k, v in vars(args).items() if k != "func"})
        # benchlib's document head (schema, timestamp, git, machine), as every bench result has
        self.head, self.times0 = benchlib.start_doc(results.SCHEMA)

    # ---------------------------------------------------------------- set-up
    def size_of(self, name):
        return self.args.size or self.args.sizes.get(name)

    def workload(self, name, size=None):
        size = size or self.size_of(name)
        key = (name, size)
        if key not in self.workloads:
            w = WORKLOADS[name](size, self.build, self.workdir)
            why = w.precondition()
            if why:
                raise Refused(why)
            w.prepare()
            self.workloads[key] = w
        return self.workloads[key]

    def provision(self, max_footprint, kmax=1):
        """Pool and swap sizes for everything this session will run."""
        need = int(max_footprint * kmax * 1.3) + 128 * MIB
        self.pool = max(256 * MIB, -(-need // (64 * MIB)) * 64 * MIB)
        self.swap = max(1024 * MIB, -(-int(max_footprint * kmax * 1.5) // MIB) * MIB)

    def mode(self, name):
        """The mode, set up on first use; raises Refused with the reason."""
        if name in self.refused:
            raise Refused(self.refused[name])
        if name in self.modes:
            return self.modes[name]
        m = make_mode(name, self.build, spin=getattr(self.args, "spin", "on") == "on")
        why = m.precondition(self.pool, self.swap)
        if why:
            self.refused[name] = why
            log("mode %s refused: %s" % (name, why))
            raise Refused(why)
        try:
            m.setup(self.workdir, self.pool, self.swap)
        except Exception as e:
            m.teardown()
            self.refused[name] = "set-up failed: %s" % e
            log("mode %s refused: set-up failed: %s" % (name, e))
            raise Refused(self.refused[name])
        sysenv.UNDO.push("mode %s" % name, m.teardown)
        self.modes[name] = m
        return m

    def close(self):
        sysenv.UNDO.run_all()

    # ---------------------------------------------------------------- running
    def progress(self, msg):
        self.done += 1
        el = time.monotonic() - self.t_start
        eta = ""
        if self.planned > self.done and self.done:
            eta = " | ~%d min left" % math.ceil(el / self.done * (self.planned - self.done) / 60)
        log("[%d/%d %s%s] %s" % (self.done, self.planned, fmt_dur(el), eta, msg))

    def reference(self, name, size=None):
        """Local runs of a workload (the denominator and the expected check);
        runs --runs times on first use."""
        w = self.workload(name, size)
        key = (name, w.size)
        if key in self.refs:
            return self.refs[key]
        recs = []
        self.planned += self.args.runs
        for rep in range(self.args.runs):
            recs.append(self.run(name, "local", None, rep, size=w.size, tag_extra="ref", extra={"reference": True}))
        good = [r for r in recs if r["ok"]]
        if not good:
            raise RuntimeError("%s does not run locally: %s" % (name, recs[0].get("error") or recs[0].get("rc")))
        checks = {r["check"] for r in good}
        if len(checks) != 1:
            raise RuntimeError("%s gives different results on local runs: %s" % (name, checks))
        fp = max(r["footprint_kib"] for r in good) * 1024
        ref = {"check": checks.pop(), "footprint_bytes": fp,
               "metric": statistics.median(r[w.metric] for r in good)}
        self.refs[key] = ref
        for r in recs:
            r["verified"] = r["ok"] and r["check"] == ref["check"]
        log("%s: local footprint %d MiB, %s %.3g (median of %d)" % (name, fp >> 20, w.metric, ref["metric"],
                                                                     len(good)))
        return ref

    def limit_for(self, name, fraction, size=None):
        fp = self.reference(name, size)["footprint_bytes"]
        return int(fp * fraction / 100) // PAGE * PAGE

    def run(self, name, mode_name, fraction, rep, k=1, comex_opts=None, comex_local_mem=None, size=None,
            tag_extra="", extra=None, neighbour="none"):
        """Runs workload `name` in a mode at `fraction` % of its local
        footprint (k instances at once, each in its own cgroup with that
        limit), beside a CPU-bound neighbour unless it is "none"; returns the
        record (also appended to self.records)."""
        w = self.workload(name, size)
        rec = {"experiment": self.experiment, "workload": name, "size_mib": w.size, "mode": mode_name,
               "fraction": fraction, "rep": rep, "k": k, "comex_opts": list(comex_opts or []),
               "load_before": sysenv.loadavg()}
        rec["neighbour"] = neighbour   # the CPU-bound program beside this run (sysenv.NEIGHBOURS)
        if extra:
            rec.update(extra)
        ref = self.refs.get((name, w.size))
        limit = None
        if mode_name != "local" and fraction is not None:
            limit = self.limit_for(name, fraction, size)
            ref = self.refs[(name, w.size)]
        rec["limit_bytes"] = limit
        try:
            m = self.mode(mode_name)
            if w.refused_by(m):
                raise Refused(w.refused_by(m))
        except Refused as e:
            rec.update(ok=False, verified=False, refused=str(e))
            self.records.append(rec)
            self.progress("%s %s: refused: %s" % (name, mode_name, e))
            return rec
        timeout = self.args.timeout
        if ref and not w.higher_is_better:
            # k programs share the machine's cores: allow each k times as long
            timeout = min(timeout, max(self.args.min_timeout, ref["metric"] * self.args.timeout_factor) * k)
        if neighbour != "none":
            why = sysenv.neighbour_precondition(neighbour)
            if why:
                rec.update(ok=False, verified=False, refused=why)
                self.records.append(rec)
                self.progress("%s %s beside %s: refused: %s" % (name, mode_name, neighbour, why))
                return rec
            # the program gets about half the CPU beside a neighbour on every core
            timeout = min(self.args.timeout, 2 * timeout)
        rec["timeout_s"] = timeout
        vm0 = sysenv.vmstat()
        cpu0 = benchlib.cpu_times()
        ctx = None
        results = [None] * k
        tag = "%s-%s-%s-%s-%d%s%s" % (name, mode_name, fraction, k, rep, tag_extra,
                                      "" if neighbour == "none" else "-" + neighbour)
        nb = None
        # every mode alike: about what the run touches fresh (program, swap device or pool)
        rec["warmed_mib"] = sysenv.warm_guest_memory(2 * w.size * k)
        try:
            ctx = m.begin(limit, k, comex_opts, comex_local_mem)
            if neighbour != "none":
                nb = sysenv.Neighbour(neighbour, timeout)
                rec["neighbour_cmd"] = nb.describe()
                nb.start()
            stats = [os.path.join(self.workdir, "%s-%d.stats.json" % (tag, i)) if m.comex else None
                     for i in range(k)]
            for s in stats:
                if s and os.path.exists(s):
                    os.unlink(s)

            def one(i):
                try:
                    results[i] = w.run(ctx, i, stats[i], timeout, "%s-%d" % (tag, i))
                except Exception as e:  # noqa
                    results[i] = {"rc": -1000, "error": "harness: %s" % e}
            if k == 1:
                one(0)
            else:
                th = [threading.Thread(target=one, args=(i,)) for i in range(k)]
                for t in th:
                    t.start()
                for t in th:
                    t.join()
            rec["cgroups"] = [c.stats() for c in ctx.cgroups]
            rec["mode_info"] = ctx.info
            for i, s in enumerate(stats):
                if s and os.path.exists(s):
                    try:
                        results[i]["comex_stats"] = json.load(open(s))
                    except (OSError, ValueError) as e:
                        results[i]["comex_stats_error"] = str(e)
        except Refused as e:
            rec.update(ok=False, verified=False, refused=str(e))
            self.records.append(rec)
            self.progress("%s %s: refused: %s" % (name, mode_name, e))
            return rec
        finally:
            if nb is not None:
                nb.close()
            if ctx is not None:
                m.end(ctx)
        vm1 = sysenv.vmstat()
        cpu1 = benchlib.cpu_times()
        rec["vmstat_delta"] = {k2: vm1.get(k2, 0) - vm0.get(k2, 0) for k2 in vm1}
        idle = benchlib.cpu_share(cpu0, cpu1, benchlib.IDLE, benchlib.IOWAIT)
        steal = benchlib.cpu_share(cpu0, cpu1, benchlib.STEAL)
        rec["cpu_busy_pct"] = None if idle is None else round(100.0 * (1 - idle), 1)
        rec["steal_pct"] = None if steal is None else round(100.0 * steal, 1)
        rec["load_after"] = sysenv.loadavg()
        rec["instances"] = results
        for r in results:
            r.pop("tail", None)
        ok = all(r and r.get("rc") == 0 and not r.get("timed_out") and "error" not in r for r in results)
        rec["ok"] = ok
        if ok:
            # the record's own metrics: the mean over the k instances
            for key in (w.metric, "time_s", "get_rps", "set_rps", "get_p50_ms", "get_p99_ms", "set_p50_ms",
                        "set_p99_ms", "access_s", "footprint_kib"):
                vals = [r[key] for r in results if key in r and r[key] is not None]
                if vals:
                    rec[key] = sum(vals) / len(vals) if key != "footprint_kib" else max(vals)
            if k > 1 and all("time_s" in r for r in results):
                rec["time_s_max"] = max(r["time_s"] for r in results)  # the slowest program of the k
            rec["check"] = results[0]["check"]
            checks = {r["check"] for r in results}
            rec["verified"] = bool(ref) and checks == {ref["check"]}
        else:
            rec["verified"] = False
            bad = [r for r in results if not (r and r.get("rc") == 0 and "error" not in r)] or results
            rec["error"] = (bad[0] or {}).get("error") or ("timed out after %ds" % timeout if bad[0].get("timed_out")
                                                            else "exit status %s" % bad[0].get("rc"))
            errf = os.path.join(self.workdir, "%s-0.err" % tag)
            rec["stderr_tail"] = (sysenv.read(errf, "") or "")[-800:]
            oom = sum(c.get("oom_kills", 0) for c in rec.get("cgroups", []))
            if oom:
                rec["error"] += " (cgroup OOM kills: %d)" % oom
        self.records.append(rec)
        desc = "%s %s%s%s%s rep %d" % (name, mode_name, " %d%%" % fraction if fraction else "",
                                       " k=%d" % k if k > 1 else "",
                                       "" if neighbour == "none" else " beside " + neighbour, rep + 1)
        if comex_opts:
            desc += " " + " ".join(comex_opts)
        if ok:
            v = rec[w.metric]
            rel = ""
            if ref:
                rel = " (%.2fx local)" % ((ref["metric"] / v) if w.higher_is_better else (v / ref["metric"]))
            self.progress("%s: %s %.3g%s %s" % (desc, w.metric, v, rel,
                                                "verified" if rec["verified"] or not ref else "OUTPUT DIFFERS"))
            if ref and not rec["verified"]:
                log("  !! %s: check %r != local %r" % (desc, rec["check"], ref["check"]))
        else:
            self.progress("%s: FAILED: %s" % (desc, rec["error"]))
            if rec.get("stderr_tail"):
                log("  stderr: " + rec["stderr_tail"].strip().replace("\n", "\n  stderr: ")[-600:])
        return rec


def fmt_dur(s):
    s = int(s)
    return "%d:%02d" % (s // 60, s % 60) if s < 3600 else "%d:%02d:%02d" % (s // 3600, s % 3600 // 60, s % 60)
