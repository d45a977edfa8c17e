#!/bin/bash
# usage: abbin.sh ROUNDS -- jetbench ARGS... : alternates new (target/release) and base binaries
R=$1; shift; shift
for r in $(seq 1 $R); do
  for v in new base; do
    pkill -x jetcore; sleep 0.3
    D=$(mktemp -d /tmp/ab-XXXX)
    B=/work/main/target/release/jetcore; [ $v = base ] && B=/work/base-target/release/jetcore
    $B -sd $D -p 4444 >/dev/null 2>&1 &
    SP=$!
    sleep 0.8
    T0=$(awk '{print $14+$15}' /proc/$SP/stat)
    out=$(/work/main/target/release/jetbench "$@" --url nats://127.0.0.1:4444 2>&1 | grep -E "msgs/s|latency")
    T1=$(awk '{print $14+$15}' /proc/$SP/stat)
    echo "round $r $v cpu_ticks $((T1-T0)) $(echo $out | tr -s ' ')"
    kill $SP; wait $SP 2>/dev/null; rm -rf $D
  done
done
