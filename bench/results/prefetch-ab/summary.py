# Per configuration directory: times (redis: GETs/s), prefetch accuracy and coverage, remote faults, pages mapped by prefetch, probes, GB read.
import json,glob,os,sys,statistics as S
base=sys.argv[1] if len(sys.argv)>1 else os.path.dirname(os.path.abspath(__file__))
rows={}
for cfg in sorted(glob.glob(base+'/*/')):
    c=cfg.rstrip('/').split('/')[-1]
    for f in sorted(glob.glob(cfg+'eval-*.json')):
        d=json.load(open(f))
        for r in d['records']:
            if r['mode']=='local' or not r.get('instances') or not r.get('ok'): continue
            st=r['instances'][0].get('comex_stats') or {}
            t=r['get_rps'] if r['workload']=='redis' else r['time_s']
            rows.setdefault((r['workload'],c),[]).append((t,st.get('prefetch_accuracy'),st.get('prefetch_coverage'),st.get('faults_remote'),st.get('pages_prefetch_mapped'),st.get('prefetch_probes_used',0)+st.get('prefetch_probes_wasted',0),st.get('bytes_read')))
for k in sorted(rows):
    v=rows[k]
    print("%-7s %-4s n=%d %s med %.2f [%s] acc %s cov %s remote %s mapped %s probes %s GBread %s"%(k[0],k[1],len(v),'rps' if k[0]=='redis' else 's',S.median(x[0] for x in v),
      " ".join("%.1f"%x[0] for x in v)," ".join(str(x[1]) for x in v)," ".join(str(x[2]) for x in v)," ".join(str(x[3]) for x in v)," ".join(str(x[4]) for x in v)," ".join(str(x[5]) for x in v)," ".join("%.2f"%(x[6]/1e9) for x in v)))
