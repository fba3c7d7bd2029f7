"""Medians per workload, mode and handler configuration of the result files in DIR
(quiet/ or busy/): python3 summary.py DIR."""
import json,glob,os,sys,statistics as st,collections
d=sys.argv[1] if len(sys.argv)>1 else os.path.dirname(os.path.abspath(__file__))
res=collections.defaultdict(list); steal=collections.defaultdict(list)
for f in sorted(glob.glob(d+'/*-eval-*.json')):
    cfg=f.split('/')[-1].split('-')[0]
    for r in json.load(open(f))['records']:
        if r['mode']=='local' or not r.get('verified'): continue
        res[(r['workload'],r['mode'],cfg)].append(r['time_s']); steal[(r['workload'],r['mode'],cfg)].append(r.get('steal_pct'))
cfgs=sorted({k[2] for k in res})
for w in ['seq','rand','mt','python','sqlite','redis','sort']:
    for m in ['comex','comex-shm']:
        row=[]
        for c in cfgs:
            v=res.get((w,m,c))
            if v: row.append(f"{c} {st.median(v):6.2f} ({', '.join(f'{x:.1f}' for x in v)})")
        if row: print(f"{w:7s} {m:10s} | "+" | ".join(row))
