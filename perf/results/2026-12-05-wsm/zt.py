import os, mmap, sys, time
mode=sys.argv[1]  # none|zero|zerosync
chunk=int(sys.argv[2]) if len(sys.argv)>2 else 65536
path='/work/lat/zt.seg'
try: os.unlink(path)
except FileNotFoundError: pass
fd=os.open(path, os.O_RDWR|os.O_CREAT|os.O_DIRECT, 0o644)
size=256<<20
os.posix_fallocate(fd,0,size); os.fsync(fd)
buf=mmap.mmap(-1,4096); buf.write(b'x'*4096)
zb=mmap.mmap(-1,1<<20)
zeroed=0; off=0; n=0; t0=time.time()
while time.time()-t0<3:
    if mode!='none' and zeroed < off+512*1024:
        os.pwritev(fd,[memoryview(zb)[:chunk]],max(zeroed,off)); zeroed=max(zeroed,off)+chunk
        if mode=='zerosync': os.fdatasync(fd)
    os.pwritev(fd,[buf],off,os.RWF_DSYNC); off+=4096; n+=1
print(mode,chunk,'writes',n)
