#!/bin/bash
# usage: abbin.sh ROUNDS SCENARIO BIN... ; SCENARIO: an (async-nats 300k) or "jetbench args"
R=$1; SC=$2; shift 2
for r in $(seq 1 $R); do for b in "$@"; do
  D=$(mktemp -d /tmp/abb-XXXX)
  $b -sd $D -p 4444 -m 5444 >/dev/null 2>&1 &
  SP=$!; sleep 0.8
  T0=$(awk '{print $14+$15}' /proc/$SP/stat)
  if [ "$SC" = an ]; then
    out=$(/work/main/target/release/examples/asyncnats_js nats://127.0.0.1:4444 ${N:-300000} 128 AN | python3 -c 'import json,sys; d=json.load(sys.stdin); print("pub/s", d["publish_msgs_per_s"], "consume/s", d["consume_msgs_per_s"])')
  else
    out=$(/work/main/target/release/jetbench --url nats://127.0.0.1:4444 $SC 2>&1 | grep -E "msgs/s" | head -1 | tr -s ' ')
  fi
  T1=$(awk '{print $14+$15}' /proc/$SP/stat)
  b2=$(curl -s localhost:5444/metrics | awk '/^jetcore_store_blocking_writes_total/{s+=$2} END{print s}')
  echo "r$r $(basename $b) $out ticks $((T1-T0)) blocking $b2"
  kill $SP; wait $SP 2>/dev/null; rm -rf $D
done; done
