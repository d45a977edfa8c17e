#!/bin/bash
# usage: ansched.sh BIN [args]: schedstat (on-cpu, run-queue wait) of each thread over 1 s of the publish phase
# Fixed 2026-12-07 (evening): keyed by thread id. Keyed by name, a shard's two threads of one name
# (executor, glommio's blocking thread) made the busy one's figures its totals since start (perf/shards.md).
BIN=$1; shift
D=$(mktemp -d /tmp/anr-XXXX)
$BIN -sd $D -p 4444 -m 5444 "$@" >/dev/null 2>&1 &
SP=$!
sleep 0.8
/work/main/target/release/examples/asyncnats_js nats://127.0.0.1:4444 600000 128 AN > /tmp/pl/ansched.client &
CP=$!
sleep 1.0
snap() { for p in $SP $CP; do for t in /proc/$p/task/*; do echo "$(basename $t) $(cat $t/comm | tr ' ' _) $(cat $t/schedstat)"; done; done; }
T0=$(date +%s.%N); snap > /tmp/pl/s0; sleep 1; snap > /tmp/pl/s1; T1=$(date +%s.%N); echo "interval $(echo "$T1 - $T0" | bc)"
wait $CP; cat /tmp/pl/ansched.client
kill $SP; wait $SP 2>/dev/null; rm -rf $D
python3 - <<'PY'
a={ (l.split()[0],l.split()[1]):l.split()[2:] for l in open('/tmp/pl/s0')}
for l in open('/tmp/pl/s1'):
    f=l.split(); k=(f[0],f[1])
    if k in a:
        run=(int(f[2])-int(a[k][0]))/1e7; wait=(int(f[3])-int(a[k][1]))/1e7; n=int(f[4])-int(a[k][2])
        if run>0.5: print(f"{k[1]:24s} on-cpu {run:5.1f}%  runq-wait {wait:5.1f}%  switches {n}")
PY
