"""The demo's real program: builds a large list of records, then makes two
passes over it (a digest, then per-bucket totals); prints the results
(compared with a run without comex) and, on stderr, its peak resident memory."""
import hashlib
import resource
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
records = [("user%07d" % i, i * 2654435761 % 1000003, (i % 97, i % 89)) for i in range(n)]
h = hashlib.sha256()
for name, score, tags in records:
    h.update(b"%s:%d:%d;" % (name.encode(), score, tags[0] + tags[1]))
totals = [0] * 16
for name, score, tags in records:
    totals[score % 16] += tags[0]
print("records %d digest %s totals %d" % (n, h.hexdigest(), sum(t * (k + 1) for k, t in enumerate(totals))))
print("peak_rss_mib %d" % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024), file=sys.stderr)
