"""Versioned result files and their summaries.

bench/results/eval-<experiment>-<UTC>.json, schema comex-bench-eval/1:
  schema, timestamp, git, machine, warnings: benchlib's head and tail, as
             every bench result document has them (start_doc, finish_doc)
  metadata   machine, kernel, CPU, cores, THP, git revision, options, load
             (metadata.checked: files whose checked metadata differ are never merged)
  modes      how every mode was set up (or why it was refused)
  references local footprint, expected check and local metric per workload
  records    one per run (each repetition of each configuration)
  summary    per configuration: median, min, max of the primary metric over
             the verified runs, spread and a warning when it exceeds 10 %"""

import datetime
import glob
import json
import os
import statistics

from .sysenv import ROOT, benchlib, loadavg

SCHEMA = "comex-bench-eval/1"
RESULTS_DIR = ROOT / "bench" / "results"
SPREAD_LIMIT = 0.10
SUMMARY_KEYS = ["time_s", "time_s_max", "access_s", "get_rps", "set_rps", "get_p50_ms", "get_p99_ms", "set_p50_ms", "set_p99_ms"]


def config_key(r):
    return (r.get("workload"), r.get("mode"), r.get("fraction"), r.get("k", 1), tuple(r.get("comex_opts") or ()),
            r.get("param"), r.get("value"), r.get("neighbour") or "none")


def reason(r):
    """Why a run has no result, in a few words."""
    if r.get("refused"):
        return "refused: %s" % r["refused"]
    if r.get("skipped"):
        return "skipped: %s" % r["skipped"]
    if r.get("ok"):
        return "output differs from local"
    err = r.get("error") or "failed"
    tail = r.get("stderr_tail") or ""
    if "leave no room" in tail:
        return "comex refused to start: the budget leaves no room beside its buffers"
    if "OOM kills" in err:
        return "OOM-killed (%s)" % err
    if "timed out" in err:
        return "timeout (%s)" % err
    return err


def summarize(records, metric_of):
    groups = {}
    for r in records:
        if "mode" not in r:
            continue
        groups.setdefault(config_key(r), []).append(r)
    out = []
    for key, rs in groups.items():
        w, mode, frac, k, opts, param, value, nb = key
        good = [r for r in rs if r.get("ok") and r.get("verified")]
        s = {"workload": w, "mode": mode, "fraction": frac, "k": k, "comex_opts": list(opts), "param": param,
             "value": value, "neighbour": nb, "runs": len(rs), "verified_runs": len(good),
             "failed": [reason(r) for r in rs if not (r.get("ok") and r.get("verified"))],
             "metric": metric_of(w)}
        for m in SUMMARY_KEYS:
            vals = [r[m] for r in good if r.get(m) is not None]
            if not vals:
                continue
            med = statistics.median(vals)
            s[m] = {"median": med, "min": min(vals), "max": max(vals), "n": len(vals),
                    "spread": (max(vals) - min(vals)) / med if med else 0.0}
        pm = s.get(s["metric"])
        s["warn_spread"] = bool(pm and pm["n"] > 1 and pm["spread"] > SPREAD_LIMIT)
        if pm is not None and pm["n"] < 3:
            s["warn_few_runs"] = True
        cs = [r["instances"][0].get("comex_stats") for r in good if r.get("instances") and r["instances"][0]
              and r["instances"][0].get("comex_stats")]
        if cs:
            s["comex_stats_median"] = {kk: statistics.median(c[kk] for c in cs) for kk in cs[0]
                                       if isinstance(cs[0][kk], (int, float)) and not isinstance(cs[0][kk], bool)
                                       and all(kk in c for c in cs)}
        vm = [r.get("vmstat_delta") for r in good if r.get("vmstat_delta")]
        if vm:
            s["vmstat_median"] = {kk: statistics.median(v.get(kk, 0) for v in vm) for kk in vm[0]}
        s["load_median"] = statistics.median(r["load_before"][0] for r in rs if r.get("load_before")) \
            if any(r.get("load_before") for r in rs) else None
        out.append(s)
    return out


def write(sess, extra=None):
    from .workloads import WORKLOADS
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    meta = dict(sess.meta)
    meta["load_after"] = loadavg()
    meta["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    # this experiment's runs, plus the local reference runs (shared by the experiments of `all`)
    recs = [r for r in sess.records if r.get("experiment") == sess.experiment or r.get("reference")]
    # benchlib's head (the experiment's own copy of the machine: `all` writes several), then the harness's fields
    doc = dict(sess.head, timestamp=stamp, machine=dict(sess.head["machine"]), **{
        "experiment": sess.experiment,
        "metadata": meta,
        "modes": {name: m.describe() for name, m in sess.modes.items()},
        "refused_modes": sess.refused,
        "workloads": {"%s" % w.name: dict(w.params(), description=w.description, metric=w.metric,
                                          higher_is_better=w.higher_is_better, access=w.access)
                      for (_, _), w in sess.workloads.items()},
        "references": {"%s" % n: v for (n, s), v in sess.refs.items()},
        "records": recs,
        "summary": summarize(recs, lambda w: WORKLOADS[w].metric if w in WORKLOADS else "time_s"),
    })
    if extra:
        doc.update(extra)
    path = None if getattr(sess.args, "no_save", False) else RESULTS_DIR / ("eval-%s-%s.json" % (sess.experiment, stamp))
    benchlib.finish_doc(doc, sess.times0, "eval-" + sess.experiment, sess.args, path=path)
    return doc, path


def load_all():
    docs = []
    for p in sorted(glob.glob(str(RESULTS_DIR / "eval-*.json"))):
        try:
            d = json.load(open(p))
        except (OSError, ValueError):
            continue
        if d.get("schema") != SCHEMA:
            continue
        d["_path"] = os.path.relpath(p, ROOT)
        docs.append(d)
    return docs


def compatible(a, b):
    """The checked metadata fields that differ between two result files."""
    ca, cb = a["metadata"]["checked"], b["metadata"]["checked"]
    return [k for k in sorted(set(ca) | set(cb)) if ca.get(k) != cb.get(k)]


# A section is the newest file of its experiment if that file finished
# within SELECT_WINDOW of the newest file overall; each section compares its
# configurations within its own run, and one whose checked metadata differ
# from the newest file's says so (section_note), since a build, kernel or
# CPU of another day makes its numbers incomparable with the others'.
SELECT_WINDOW_S = 14 * 24 * 3600


def age_s(newest, d):
    """Seconds between two files' ends (metadata 'finished', ISO 8601)."""
    def t(x):
        return datetime.datetime.fromisoformat(x["metadata"].get("finished", "1970-01-01T00:00:00").replace("Z", "+00:00"))
    try:
        return (t(newest) - t(d)).total_seconds()
    except ValueError:
        return float("inf")


def select(docs):
    """The newest file of each experiment (no older than SELECT_WINDOW
    before the newest file overall) and the newest file overall, whose
    machine heads the report; the others are listed with the reason."""
    docs = [d for d in docs if d["experiment"] not in ("smoke", "demo")]
    if not docs:
        return {}, None, []
    newest = max(docs, key=lambda d: d["metadata"].get("finished", ""))
    chosen, skipped = {}, []
    for d in sorted(docs, key=lambda d: d["metadata"].get("finished", ""), reverse=True):
        if d["experiment"] in chosen:
            skipped.append((d["_path"], "superseded by `%s`" % chosen[d["experiment"]]["_path"]))
        elif age_s(newest, d) > SELECT_WINDOW_S:
            skipped.append((d["_path"], "more than %d days older than the newest result" % (SELECT_WINDOW_S // 86400)))
        else:
            chosen[d["experiment"]] = d
    return chosen, newest, skipped


def section_note(newest, d):
    """None, or which checked metadata of d differ from the newest file's."""
    diff = compatible(newest, d)
    return diff or None
