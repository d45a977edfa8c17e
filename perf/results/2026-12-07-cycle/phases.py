#!/usr/bin/env python3
"""phases.py TRACE COMM LABEL: per op (data recvfrom end -> next data recvfrom end), the median of each phase in µs:
A recv end->pwritev2 start, B pwritev2, C pwritev2 end->sendto start, D sendto, E sendto end->next data recv end."""
import re,sys,statistics as st
ev=[];pending={}
for l in open(sys.argv[1]):
    if sys.argv[2] not in l: continue
    m=re.match(r'\s*([\d.]+) \(\s*([\d.]*)\s*(?:ms)?\): (\S+)/(\d+)\s+(?:\.\.\. \[continued\]: )?(\w+)\(.*?(?:= (\S+))?\s*$',l)
    if not m: continue
    t=float(m.group(1)); d=m.group(2); tid=m.group(4); n=m.group(5); r=m.group(6)
    key=(tid,n)
    if l.rstrip().endswith('...'): pending[key]=t; continue
    start=pending.pop(key,t) if '[continued]' in l else t
    ev.append((start,t+(float(d) if d else 0),n,r or ''))
ev.sort()
rec=[i for i,e in enumerate(ev) if e[2]=='recvfrom' and not e[3].startswith('-')]
P={k:[] for k in 'ABCDE'};tot=[]
for a,b in zip(rec,rec[1:]):
    seg=ev[a:b+1]
    w=[e for e in seg if e[2]=='pwritev2']; s=[e for e in seg if e[2]=='sendto']
    if len(w)!=1 or len(s)!=1: continue
    r0=ev[a];w=w[0];s=s[0];r1=ev[b]
    P['A'].append(w[0]-r0[1]);P['B'].append(w[1]-w[0]);P['C'].append(s[0]-w[1]);P['D'].append(s[1]-s[0]);P['E'].append(r1[1]-s[1]);tot.append(r1[1]-r0[1])
print(sys.argv[3], f"n={len(tot)} period {st.median(tot)*1000:.0f}", ' '.join(f"{k} {st.median(v)*1000:.0f}" for k,v in P.items()))
