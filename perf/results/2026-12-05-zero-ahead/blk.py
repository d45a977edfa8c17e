import re
issues=[]; comps=[]; pw=[]; st=None
for l in open('blk.txt'):
    m=re.search(r'(\d+\.\d+):\s+(\S+): (.*)',l); 
    if not m: continue
    t=float(m.group(1)); ev=m.group(2); rest=m.group(3)
    if ev=='block:block_rq_issue':
        f=rest.split(); issues.append((t,f[1],int(f[2])))
    elif ev=='block:block_rq_complete':
        comps.append(t)
    elif ev=='raw_syscalls:sys_enter' and rest.startswith('NR 328 '): st=t
    elif ev=='raw_syscalls:sys_exit' and rest.startswith('NR 328 ') and st: pw.append((st,t)); st=None
import collections
c=collections.Counter((f,b) for _,f,b in issues); print(c.most_common(12))
big=[(t,b) for t,f,b in issues if b>=65536]
print('big issues',len(big),'pwritev2',len(pw))
d=sorted(e-s for s,e in pw); p99=d[int(.99*len(d))]; print('p99 %.0f'%(p99*1e6))
def near(s):
    return any(s-600e-6<=t<=s+50e-6 for t,b in big)
import bisect
bt=[t for t,b in big]
def nearb(s):
    i=bisect.bisect_left(bt,s-600e-6); return i<len(bt) and bt[i]<=s+50e-6
slow=[(s,e) for s,e in pw if e-s>=p99]; fast=[(s,e) for s,e in pw if e-s<p99]
print('slow with big write within 600us before: %d/%d; fast: %d/%d'%(sum(nearb(s) for s,e in slow),len(slow),sum(nearb(s) for s,e in fast),len(fast)))
