#!/bin/bash
# usage: cg.sh BIN OUT [N]: callgrind's instruction count of N one-in-flight KV puts (async-nats) on a
# --shards 1 server, after 200 warm-up puts; prints instructions per put and writes OUT.<pid>.2
B=$1; OUT=$2; N=${3:-1000}
KV=/work/main/target/release/examples/asyncnats_kv
D=$(mktemp -d /tmp/vg-XXXX)
valgrind --tool=callgrind --compress-strings=no --compress-pos=no --callgrind-out-file=$OUT.%p $B -sd $D -p 4444 -m 5444 --shards 1 > $OUT.log 2>&1 &
VP=$!
for i in $(seq 1 60); do grep -q "Server is ready" $OUT.log && break; sleep 1; done
for t in 1 2 3 4 5; do ASYNCNATS_KV_REUSE=1 $KV nats://127.0.0.1:4444 200 0 >/dev/null 2>&1 && break; done
callgrind_control -d $VP >/dev/null
ASYNCNATS_KV_REUSE=1 $KV nats://127.0.0.1:4444 $N 0 | cut -c1-60
callgrind_control -d $VP >/dev/null
kill -9 $VP; wait $VP 2>/dev/null; rm -rf $D
F=$(ls $OUT.*.2)
T=$(callgrind_annotate $F 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
echo "$(basename $B) instructions per put: $((T / N)) ($F)"
