#!/bin/bash
BIN=$1; L=$2
D=$(mktemp -d /work/lat/d.XXXX)
env $JCENV $BIN -a 127.0.0.1 -p 4333 -js -sd $D/data > $D/log 2>&1 &
P=$!
sleep 1
perf record -q -a -e block:block_rq_issue -e raw_syscalls:sys_enter --filter 'id == 328' -e raw_syscalls:sys_exit --filter 'id == 328' -o $D/perf.data -- /work/main/target/release/jetbench --url nats://127.0.0.1:4333 js-pub-sync --duration 3s > $D/out.txt 2>&1
kill $P; wait $P 2>/dev/null
perf script -i $D/perf.data -F comm,tid,time,event,trace 2>/dev/null > /work/lat/last2.txt
grep latency $D/out.txt
python3 /work/lat/cls.py /work/lat/last2.txt
rm -rf $D
