#!/bin/bash
# usage: thr.sh BIN CLIENTCMD...: per-thread ticks and schedstat over 1 s, 1 s into the client's run
BIN=$1; shift
D=$(mktemp -d /tmp/anr-XXXX)
$BIN -sd $D -p 4444 -m 5444 >/dev/null 2>&1 &
SP=$!
sleep 0.8
"$@" > /tmp/pl/thr.client 2>&1 &
CP=$!
sleep ${DELAY:-1.0}
snap() { for t in /proc/$SP/task/* /proc/$CP/task/*; do echo "$(basename $t) $(cat $t/comm | tr ' ' _) $(awk '{print $14+$15}' $t/stat) $(cat $t/schedstat)"; done; }
S0=$(head -1 /proc/stat); snap > /tmp/pl/t0; T0=$(date +%s%N); sleep 1; snap > /tmp/pl/t1; T1=$(date +%s%N); S1=$(head -1 /proc/stat)
wait $CP; grep -E "msgs/s|publish_msgs" /tmp/pl/thr.client
kill $SP; wait $SP 2>/dev/null; rm -rf $D
echo "interval_ms $(( (T1-T0)/1000000 ))"
python3 - "$S0" "$S1" <<'PY'
import sys
s0=[int(x) for x in sys.argv[1].split()[1:]]; s1=[int(x) for x in sys.argv[2].split()[1:]]
d=[b-a for a,b in zip(s0,s1)]; print("proc/stat user,nice,sys,idle,iowait,irq,soft,steal:",d[:8])
a={l.split()[0]:l.split() for l in open('/tmp/pl/t0')}
for l in open('/tmp/pl/t1'):
    f=l.split()
    if f[0] in a:
        g=a[f[0]]; ticks=int(f[2])-int(g[2]); run=(int(f[3])-int(g[3]))/1e6; wait=(int(f[4])-int(g[4]))/1e6
        if ticks>0 or run>5: print(f"{f[1]:20s} ticks {ticks:4d}  on-cpu {run:7.1f} ms  runq {wait:6.1f} ms")
PY
