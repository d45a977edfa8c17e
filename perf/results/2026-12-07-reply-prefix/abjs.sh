#!/bin/bash
# usage: abjs.sh ROUNDS BIN_A BIN_B -- jetbench ARGS...: alternates A and B (default config), server CPU ticks per run
R=$1; A=$2; B=$3; shift 4
for r in $(seq 1 $R); do
  for v in $A $B; do
    D=$(mktemp -d /tmp/ab-XXXX)
    $v -sd $D -p 4444 -m 5444 >/dev/null 2>&1 &
    SP=$!
    sleep 0.8
    T0=$(awk '{print $14+$15}' /proc/$SP/stat)
    out=$(/work/main/target/release/jetbench "$@" --url nats://127.0.0.1:4444 2>&1 | grep -E "msgs/s" | head -1)
    T1=$(awk '{print $14+$15}' /proc/$SP/stat)
    echo "round $r $(basename $v) cpu_ticks $((T1-T0)) $(echo $out | tr -s ' ')"
    kill $SP; wait $SP 2>/dev/null; rm -rf $D
  done
done
