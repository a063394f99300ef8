import json,sys,glob,collections,statistics,os
O=sys.argv[1]
rows=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(O+'/*.jsonl')):
    b=os.path.basename(f)[:-6]; parts=b.split('_'); rnd=parts[-1]; v=parts[-2]; r='_'.join(parts[:-2])
    for line in open(f):
        try: j=json.loads(line)
        except: continue
        c=j.get('case')
        if c=='load': rows[(r,'fill_s')][v].append(j.get('self_clearance_fill_s'))
        for k in ('ours_us','ratio','ours_first_pass_us','ours_triangle_tests','ours_bv_tests'):
            if c in ('clear_random','clear_batch','clear_start_goal') or (c and c.startswith('link')):
                if k in j and j[k] is not None: rows[(r,c+':'+k)][v].append(j[k])
for (r,k),d in sorted(rows.items()):
    b=d.get('base',[]); n=d.get('new',[])
    fmt=lambda x: ' '.join('%.4g'%v for v in x if v is not None)
    print(f"{r:12s} {k:45s} base {fmt(b):30s} new {fmt(n)}")
