import re,sys,statistics
open_={}; res=[]
cur={}
for l in open(sys.argv[1]):
    m=re.match(r'\s*(\S+)\s+(\d+)\s+(\d+\.\d+):\s+(\S+): (.*)',l)
    if not m: continue
    comm,tid,t,ev,rest=m.groups(); t=float(t)
    if ev=='raw_syscalls:sys_enter': cur[tid]=[t,0]
    elif ev=='raw_syscalls:sys_exit':
        if tid in cur: s,w=cur.pop(tid); res.append((t-s,w))
    elif ev=='block:block_rq_issue' and ' WSM ' in rest and tid in cur: cur[tid][1]+=1
n=len(res); wsm=[d for d,w in res if w]; no=[d for d,w in res if not w]
d=sorted(x for x,_ in res); p99=d[int(.99*n)]
slow=[w for x,w in res if x>=p99]
q=lambda a,p: sorted(a)[int(p*len(a))]*1e6 if a else 0
print(f"pwritev2 {n}, with WSM {len(wsm)} ({100*len(wsm)/n:.1f}%), p50 with {q(wsm,.5):.0f} without {q(no,.5):.0f}; p99 all {p99*1e6:.0f}; slowest1% with WSM {sum(1 for w in slow if w)}/{len(slow)}")
