#!/usr/bin/env python3
"""gaps.py TRACE LABEL: see trace.sh."""
import re,sys,statistics as st
lines=open(sys.argv[1]).read().splitlines()
ev=[]
for l in lines:
    m=re.match(r'\s*([\d.]+) \(\s*([\d.]+) ms\): \S+ (\w+)\((.*)\) = (.*)',l)
    if m: ev.append((float(m.group(1)),float(m.group(2)),m.group(3),m.group(5)))
pre=[];post=[]
for i in range(1,len(ev)):
    t,d,n,r=ev[i]; p=ev[i-1]
    if n=='pwritev2' and p[2]=='recvfrom' and not p[3].startswith('-1'): pre.append((t-(p[0]+p[1]))*1000)
    if n=='sendto' and p[2]=='pwritev2': post.append((t-(p[0]+p[1]))*1000)
q=lambda v,x: sorted(v)[int(x*len(v))]
print(sys.argv[2], f"recv->pwritev2 n={len(pre)} p50 {st.median(pre):.1f} p90 {q(pre,.9):.1f} | pwritev2->sendto n={len(post)} p50 {st.median(post):.1f} p90 {q(post,.9):.1f} (µs, under perf trace)")
