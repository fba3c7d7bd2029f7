"""Medians per experiment, workload and mode of old-*/new-* result files in DIR: python3 summary.py DIR."""
import json,glob,sys,statistics as st,collections
d=sys.argv[1]
res=collections.defaultdict(list)
for f in sorted(glob.glob(d+'/*-eval-*.json')):
    cfg=f.split('/')[-1].split('-')[0]
    for r in json.load(open(f))['records']:
        if r['mode']=='local' or not r.get('verified'): continue
        res[(r['experiment'],r['workload'],r['mode'],cfg)].append(r['time_s'])
for k in sorted({k[:3] for k in res}):
    row=[f"{c} {st.median(res[k+(c,)]):6.2f} ({', '.join(f'{x:.1f}' for x in res[k+(c,)])})" for c in ('old','new') if k+(c,) in res]
    print(f"{k[0]:6s} {k[1]:7s} {k[2]:10s} | "+" | ".join(row))
