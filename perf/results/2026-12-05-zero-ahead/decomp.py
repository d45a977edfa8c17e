import re
ev=[]
for l in open('all.txt'):
    m=re.match(r'\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+raw_syscalls:sys_(enter|exit): NR (\d+)',l)
    if not m: continue
    comm=m.group(1)
    if not (comm.startswith('jetcore-shard') or comm=='js-pub-0'): continue
    ev.append((float(m.group(4)),comm,m.group(5),int(m.group(6))))
ev.sort()
rows=[]; send=None; w_in=None; w_out=None
for t,comm,kind,nr in ev:
    if comm=='js-pub-0' and nr==44 and kind=='enter': send=t; w_in=w_out=None
    elif comm.startswith('jetcore') and nr==328 and kind=='enter': w_in=t
    elif comm.startswith('jetcore') and nr==328 and kind=='exit': w_out=t
    elif comm=='js-pub-0' and nr==45 and kind=='exit' and send and w_in and w_out:
        rows.append(((t-send)*1e6,(w_in-send)*1e6,(w_out-w_in)*1e6,(t-w_out)*1e6)); send=None
rows.sort()
n=len(rows); print('n',n)
for q in (.5,.9,.99):
    print('total p%g %.0f'%(q*100,rows[int(q*n)][0]))
slow=rows[int(.985*n):]
import statistics as st
for name,i in (('pre',1),('disk',2),('post',3)):
    print(name,'median all %.0f  median of slowest 1.5%% %.0f'%(st.median(r[i] for r in rows),st.median(r[i] for r in slow)))
print(sum(1 for r in slow if r[2]>r[1]+r[3]),'of',len(slow),'slow ones dominated by disk')
