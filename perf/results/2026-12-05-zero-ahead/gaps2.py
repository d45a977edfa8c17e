import re,collections
lines=open('all.txt').read().splitlines()
ev=[]
for l in lines:
    m=re.match(r'\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+(\S+):\s*(.*)',l)
    if not m or m.group(1)=='perf': continue
    ev.append((float(m.group(4)),m.group(1),int(m.group(3)),m.group(5).split(':')[-1],m.group(6)))
ev.sort()
gaps=[];last=None;inside=[]
for e in ev:
    if e[1]=='jetcore-shard-1' and e[3]=='sys_exit' and e[4].startswith('NR 328 '):
        last=e; inside=[]; continue
    if last is None: continue
    if e[1]=='jetcore-shard-1' and e[3]=='sys_enter' and e[4].startswith('NR 328 '):
        gaps.append(((e[0]-last[0])*1e6,inside)); last=None; continue
    inside.append((e[0]-last[0],)+e[1:])
sig=collections.Counter(); sigt=collections.defaultdict(list)
for g,ins in gaps:
    if g<250: continue
    nrs=set(); comms=set()
    for x in ins:
        comms.add(x[1].split('/')[0])
        if x[1]=='jetcore-shard-1' and x[3]=='sys_enter':
            nr=int(x[4].split()[1])
            if nr not in (426,44,45,328): nrs.add(nr)
    # client send time (js-pub-0 NR 44 enter)
    cs=[x[0]*1e6 for x in ins if x[1]=='js-pub-0' and x[3]=='sys_enter' and x[4].startswith('NR 44 ')]
    key=(tuple(sorted(nrs)),'iou' if 'iou-wrk-1117' in comms else '', 'kw' if any(c.startswith('kworker') for c in comms) else '')
    sig[key]+=1; sigt[key].append((round(g),round(cs[0]) if cs else None))
for k,v in sig.most_common(): print(v,k,sigt[k][:8])
