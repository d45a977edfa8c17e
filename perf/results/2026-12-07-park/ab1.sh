#!/bin/bash
# usage: ab1.sh ROUNDS BIN...: one in flight, default configuration (one shard per CPU, unpinned),
# alternating the binaries each round: async-nats KV puts (3 000) and jetbench js-pub-sync (3 000);
# prints rate, p50, p99 and the server's CPU (user+system, all threads) per operation in µs.
R=$1; shift
KV=/work/main/target/release/examples/asyncnats_kv
JB=/work/main/target/release/jetbench
TICK_US=$((1000000 / $(getconf CLK_TCK)))
for r in $(seq 1 $R); do for sc in kv js; do for b in "$@"; do
  D=$(mktemp -d /tmp/ab1-XXXX); $b -sd $D -p 4444 -m 5444 >/dev/null 2>&1 & SP=$!; sleep 0.8
  T0=$(awk '{print $14+$15}' /proc/$SP/stat)
  if [ $sc = kv ]; then out=$($KV nats://127.0.0.1:4444 3000 0 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["put_per_s"], "p50", d["put_p50_us"], "p99", d["put_p99_us"])')
  else out=$($JB --url nats://127.0.0.1:4444 js-pub-sync --msgs 3000 2>&1 | awk '/Acknowledged/{gsub(",","",$1); rate=$1} /latency us/{print rate, "p50", $4, "p99", $8}'); fi
  T1=$(awk '{print $14+$15}' /proc/$SP/stat)
  echo "r$r $sc $(basename $b) $out cpu_us_per_op $(( (T1-T0) * TICK_US / 3000 ))"
  kill $SP; wait $SP 2>/dev/null; rm -rf $D
done; done; done
