import os, mmap, time, threading, sys
size=int(sys.argv[2]); n=int(sys.argv[3]); qd=int(sys.argv[1])
path='/tmp/qd.tmp'
fd=os.open(path, os.O_RDWR|os.O_CREAT|os.O_DIRECT, 0o644)
total=size*n*qd
big=mmap.mmap(-1, 1<<20); big.write(b'z'*(1<<20))
for off in range(0,total+(1<<20),1<<20): os.pwritev(fd,[big],off)
os.fsync(fd)
def worker(k, out):
    buf=mmap.mmap(-1, size); buf.write(b'x'*size)
    ts=[]
    for i in range(n):
        off=(i*qd+k)*size
        t=time.perf_counter(); os.pwritev(fd,[buf],off,os.RWF_DSYNC); ts.append(time.perf_counter()-t)
    out.append(ts)
out=[]; th=[threading.Thread(target=worker,args=(k,out)) for k in range(qd)]
t0=time.perf_counter(); [t.start() for t in th]; [t.join() for t in th]; el=time.perf_counter()-t0
all_=sorted(x for o in out for x in o)
print(f"qd{qd} {size//1024}KiB: {qd*n/el:.0f} writes/s, {qd*n*size/el/2**20:.1f} MiB/s, p50 {all_[len(all_)//2]*1e6:.0f} us")
os.close(fd); os.unlink(path)
