#!/bin/bash
# usage: [CLIENT=kv|js] cg.sh BIN OUT [N]: callgrind's instruction count per one-in-flight operation on a
# --shards 1 server: N async-nats KV puts (default 1 000), or with CLIENT=js N jetbench js-pub-sync
# publishes (default 3 000; each jetbench run makes its own stream, counted in), after 200 warm-up
# ones; prints instructions per operation and writes OUT.<pid>.2
B=$1; OUT=$2; CLIENT=${CLIENT:-kv}
KV=/work/main/target/release/examples/asyncnats_kv
JB=/work/main/target/release/jetbench
if [ "$CLIENT" = js ]; then N=${3:-3000}; else N=${3:-1000}; fi
operations() { # count
  if [ "$CLIENT" = js ]; then $JB --url nats://127.0.0.1:4444 js-pub-sync --msgs $1 2>&1 | tail -3
  else ASYNCNATS_KV_REUSE=1 $KV nats://127.0.0.1:4444 $1 0 | cut -c1-60; fi
}
D=$(mktemp -d /tmp/vg-XXXX)
valgrind --tool=callgrind --compress-strings=no --compress-pos=no --callgrind-out-file=$OUT.%p $B -sd $D -p 4444 -m 5444 --shards 1 > $OUT.log 2>&1 &
VP=$!
for i in $(seq 1 60); do grep -q "Server is ready" $OUT.log && break; sleep 1; done
for t in 1 2 3 4 5; do operations 200 >/dev/null 2>&1 && break; done
callgrind_control -d $VP >/dev/null
operations $N
callgrind_control -d $VP >/dev/null
kill -9 $VP; wait $VP 2>/dev/null; rm -rf $D
F=$(ls $OUT.*.2)
T=$(callgrind_annotate $F 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
echo "$(basename $B) $CLIENT: instructions per operation: $((T / N)) ($F)"
