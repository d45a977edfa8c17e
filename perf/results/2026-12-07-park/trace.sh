#!/bin/bash
# usage: trace.sh BIN kv|js N: a --shards 1 server takes 300 one-in-flight operations, then `perf trace`
# records its system calls during N more (/tmp/pl/tr-kv.txt or tr-js.txt); gaps.py FILE LABEL then gives
# the user time on the critical path: from the request's recvfrom to the pwritev2, and from the
# pwritev2's end to the ack's sendto.
B=$1; C=$2; N=${3:-300}
mkdir -p /tmp/pl
D=$(mktemp -d /tmp/sc-XXXX)
$B -sd $D -p 4445 -m 5445 --shards 1 > /tmp/pl/sc.log 2>&1 &
P=$!
for i in $(seq 1 30); do grep -q "Server is ready" /tmp/pl/sc.log && break; sleep 0.3; done
op() { if [ $C = js ]; then /work/main/target/release/jetbench --url nats://127.0.0.1:4445 js-pub-sync --msgs $1 2>&1 | tail -1 | cut -c1-150;
  else ASYNCNATS_KV_REUSE=1 /work/main/target/release/examples/asyncnats_kv nats://127.0.0.1:4445 $1 0 | cut -c1-100; fi; }
op 300 >/dev/null
perf trace -p $P -o /tmp/pl/tr-$C.txt &
T=$!
sleep 1
op $N
kill -INT $T; wait $T
kill $P; wait $P 2>/dev/null; rm -rf $D
