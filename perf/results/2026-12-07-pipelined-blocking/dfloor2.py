import os, mmap, time, sys
mode=sys.argv[1]; n=int(sys.argv[2]); size=4096
path='/work/main/dfloor.tmp'
fd=os.open(path, os.O_RDWR|os.O_CREAT|os.O_DIRECT|os.O_DSYNC, 0o644)
total=size*n
big=mmap.mmap(-1, 1<<20); big.write(b'z'*(1<<20))
for off in range(0,total,1<<20): os.pwritev(fd,[big],off)
os.fsync(fd)
buf=mmap.mmap(-1, size); buf.write(b'x'*size)
ts=[]
for i in range(n):
    off = {'seq': i*size, 'pair': (i%2)*size, 'same': 0}[mode]
    t=time.perf_counter(); os.pwritev(fd,[buf],off); ts.append(time.perf_counter()-t)
    time.sleep(0.00005)
ts.sort(); print(f"{mode}: p50 {ts[n//2]*1e6:.0f} us p90 {ts[n*9//10]*1e6:.0f} p99 {ts[n*99//100]*1e6:.0f} mean {sum(ts)/n*1e6:.0f}")
os.close(fd); os.unlink(path)
