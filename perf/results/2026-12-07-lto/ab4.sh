#!/bin/bash
# usage: ab4.sh ROUNDS BIN...: jetbench js-pub (pipelined, 1 publisher, 500k) and async-nats publish+consume (300k), default config; rate and server CPU ticks
R=$1; shift
for r in $(seq 1 $R); do for sc in jspub an; do for b in "$@"; do
  D=$(mktemp -d /tmp/ab4-XXXX); $b -sd $D -p 4444 -m 5444 >/dev/null 2>&1 & SP=$!; sleep 0.8
  T0=$(awk '{print $14+$15}' /proc/$SP/stat)
  if [ $sc = an ]; then out=$(/work/main/target/release/examples/asyncnats_js nats://127.0.0.1:4444 300000 128 AN | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["publish_msgs_per_s"], "consume", d["consume_msgs_per_s"])')
  else out=$(/work/main/target/release/jetbench --url nats://127.0.0.1:4444 js-pub --msgs 500000 2>&1 | grep Acknowledged | awk '{print $1}'); fi
  T1=$(awk '{print $14+$15}' /proc/$SP/stat)
  echo "r$r $sc $(basename $b) $out ticks $((T1-T0))"
  kill $SP; wait $SP 2>/dev/null; rm -rf $D
done; done; done
