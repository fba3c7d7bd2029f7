"""Validates a Prometheus text exposition (stdin or a file): it must parse
with prometheus_client's parser (the reference Python implementation) and
follow the naming rules comex promises: comex_ prefix, counters end in
_total, each family's metadata before its samples and its samples together,
histogram buckets cumulative with +Inf equal to _count.
Usage: promcheck.py FILE [REQUIRED_FAMILY ...]; prints a summary, exit 1 on error."""
import sys

from prometheus_client.parser import text_string_to_metric_families


def check(text, required):
    errors = []
    families = {}
    for fam in text_string_to_metric_families(text):
        families[fam.name] = fam
        if not fam.name.startswith("comex_"):
            errors.append("%s: no comex_ prefix" % fam.name)
        if fam.type == "counter" and not any(s.name.endswith("_total") for s in fam.samples) and fam.samples:
            errors.append("%s: counter samples do not end in _total" % fam.name)
        if fam.type == "histogram":
            series = {}
            for s in fam.samples:
                key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
                series.setdefault(key, {"buckets": [], "count": None})
                if s.name.endswith("_bucket"):
                    series[key]["buckets"].append((float(s.labels["le"]), s.value))
                elif s.name.endswith("_count"):
                    series[key]["count"] = s.value
            for key, sr in series.items():
                b = sorted(sr["buckets"])
                if not b or b[-1][0] != float("inf"):
                    errors.append("%s%s: no +Inf bucket" % (fam.name, key))
                    continue
                if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
                    errors.append("%s%s: buckets not cumulative" % (fam.name, key))
                if sr["count"] != b[-1][1]:
                    errors.append("%s%s: _count %s != +Inf bucket %s" % (fam.name, key, sr["count"], b[-1][1]))
    # metadata once, before the family's samples, which come together
    seen, current = set(), None
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            name = line.split()[2]
            if name in seen:
                errors.append("%s: TYPE given twice" % name)
            seen.add(name)
            current = name
        elif line and not line.startswith("#"):
            metric = line.split("{")[0].split(" ")[0]
            if not metric.startswith(current or "\0"):
                errors.append("sample %s outside its family (current %s)" % (metric, current))
    for name in required:
        if name not in families:
            errors.append("missing family %s" % name)
    return families, errors


if __name__ == "__main__":
    text = open(sys.argv[1]).read()
    families, errors = check(text, sys.argv[2:])
    for e in errors:
        print("promcheck: " + e)
    print("promcheck: %d families, %d samples, %d errors" % (
        len(families), sum(len(f.samples) for f in families.values()), len(errors)))
    sys.exit(1 if errors else 0)
