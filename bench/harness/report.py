"""Plots (docs/img/bench-*.png) and docs/RESULTS.md from bench/results."""


def demo_table(doc):
    refs = doc.get("references", {})
    rows = []
    for s in sorted(doc["summary"], key=lambda s: (s["workload"], s["fraction"] or 101, s["mode"])):
        m = s["metric"]
        v = s.get(m)
        ref = refs.get(s["workload"], {}).get("metric")
        if v:
            hib = m.endswith("rps")
            rel = (ref / v["median"]) if hib else (v["median"] / ref)
            val = "%.0f ops/s" % v["median"] if hib else "%.2f s" % v["median"]
            rows.append("%-8s %-12s %5s  %14s  %6.2fx  %s" % (s["workload"], s["mode"],
                        "%d%%" % s["fraction"] if s["fraction"] else "-", val, rel,
                        "verified" if s["verified_runs"] == s["runs"] else "FAILED: %s" % "; ".join(map(str, s["failed"]))[:60]))
        else:
            rows.append("%-8s %-12s %5s  %14s  %7s  %s" % (s["workload"], s["mode"],
                        "%d%%" % s["fraction"] if s["fraction"] else "-", "-", "-", "; ".join(map(str, s["failed"]))[:70]))
    return "\n".join(["%-8s %-12s %5s  %14s  %7s  %s" % ("workload", "mode", "local", "result", "vs local", "check")] + rows)


def render():
    pass
