"""Medians per workload, mode, cell (quiet, or beside a neighbour) and build of
the result files in DIR (default: this folder): python3 summary.py [DIR].
Files are named BUILD-ROUND-eval-*.json; BUILD is old, new or one."""
import collections, glob, json, os, statistics as st, sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
res = collections.defaultdict(list)
for f in sorted(glob.glob(d + '/*-eval-*.json')):
    cfg = os.path.basename(f).split('-')[0]
    for r in json.load(open(f))['records']:
        if r['mode'] == 'local' or not r.get('verified'):
            continue
        cell = r.get('neighbour') or 'none'
        res[(r['workload'], r['mode'], cell, cfg)].append((r['time_s'], r.get('steal_pct')))
cfgs = [c for c in ('old', 'new', 'one') if any(k[3] == c for k in res)]
for cell in sorted({k[2] for k in res}):
    print(f"== {'quiet' if cell == 'none' else 'beside ' + cell}")
    for w in ['seq', 'rand', 'mt', 'python', 'sqlite']:
        for m in ['comex', 'comex-shm']:
            row = []
            for c in cfgs:
                v = res.get((w, m, cell, c))
                if v:
                    row.append(f"{c} {st.median(t for t, _ in v):6.2f} ({', '.join(f'{t:.1f}' for t, _ in v)})")
            if row:
                print(f"{w:7s} {m:10s} | " + " | ".join(row))
