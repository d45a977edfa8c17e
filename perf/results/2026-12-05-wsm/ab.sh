#!/bin/bash
# ab.sh ROUNDS "ENV_A" "ENV_B" ... : alternating js-pub-sync 4s on jetcore-exp
R=$1; shift
for r in $(seq $R); do for v in "$@"; do
D=$(mktemp -d /work/lat/d.XXXX)
env $v /work/lat/jetcore-exp -a 127.0.0.1 -p 4333 -js -sd $D/data > $D/log 2>&1 &
P=$!; sleep 0.7
echo "$v $(/work/main/target/release/jetbench --url nats://127.0.0.1:4333 js-pub-sync --duration 4s 2>&1 | grep -E 'msgs/s|latency' | tr '\n' ' ')"
kill $P; wait $P 2>/dev/null; rm -rf $D
done; done
