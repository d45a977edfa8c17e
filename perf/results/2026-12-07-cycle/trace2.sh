#!/bin/bash
# trace2.sh jetcore-BIN|standin OUT: 600 KV puts under perf trace -a
B=$1; OUT=$2
D=$(mktemp -d /tmp/sc-XXXX)
if [ $B = standin ]; then /work/main/target/release/examples/durable_standin 4445 $D > /tmp/pl/sc.log 2>&1 & P=$!; sleep 1
else $B -sd $D -p 4445 -m 5445 --shards 1 > /tmp/pl/sc.log 2>&1 & P=$!; for i in $(seq 1 30); do grep -q "Server is ready" /tmp/pl/sc.log && break; sleep 0.3; done; fi
KV=/work/main/target/release/examples/asyncnats_kv
ASYNCNATS_KV_REUSE=1 $KV nats://127.0.0.1:4445 300 0 | cut -c1-70
perf trace -a -o $OUT & T=$!; sleep 1
ASYNCNATS_KV_REUSE=1 $KV nats://127.0.0.1:4445 600 0 | cut -c1-70
kill -INT $T; wait $T; kill $P; wait $P 2>/dev/null; rm -rf $D
