import json,sys,glob,collections,statistics
d=sys.argv[1]
robot_cases=['clear_start_goal','clear_random','clear_batch','distance_exact','distance_rel_0.2','link_certified','link_certified_planning','link_discrete','ccd_edge']
rows=collections.OrderedDict()
for f in sorted(glob.glob(d+'/*.jsonl')):
    name=f.split('/')[-1][:-6]
    what,v,rnd=name.rsplit('_',2)
    for l in open(f):
        x=json.loads(l)
        if x.get('ours_us') is None: continue
        if what not in ('convex','service') and x['case'] not in robot_cases: continue
        rows.setdefault((what,x['case']),{'base':{},'new':{}})[v][int(rnd)]=x['ours_us']
order={'panda':0,'kr5':1,'ur5':2,'convex':3,'service':4}
print('| suite / robot | case | base us (rounds 1 / 2) | new us (rounds 1 / 2) | new/base (medians) |')
print('|---|---|---|---|---|')
ratios=[]
for (what,case),r in sorted(rows.items(), key=lambda kv:(order.get(kv[0][0],9),)):
    b=[r['base'][k] for k in sorted(r['base'])]; n=[r['new'][k] for k in sorted(r['new'])]
    if not b or not n: continue
    q=statistics.median(n)/statistics.median(b); ratios.append(q)
    print(f"| {what} | {case} | {' / '.join(f'{x:.3g}' for x in b)} | {' / '.join(f'{x:.3g}' for x in n)} | {q:.3f} |")
print()
print(f"{len(ratios)} cases: geometric mean of new/base {statistics.geometric_mean(ratios):.3f}, median {statistics.median(ratios):.3f}, range {min(ratios):.3f} to {max(ratios):.3f}")
