#!/bin/bash
# usage: ab.sh ROUNDS SECONDS  -- alternates jetcore with/without JETCORE_NO_SPARE, js-pub-sync
R=$1; S=$2
for r in $(seq 1 $R); do
  for v in spare nospare; do
    pkill -x jetcore; sleep 0.3
    D=$(mktemp -d /tmp/ab-XXXX)
    if [ $v = nospare ]; then export JETCORE_NO_SPARE=1; else unset JETCORE_NO_SPARE; fi
    /work/main/target/release/jetcore -sd $D -p 4444 >/dev/null 2>&1 &
    sleep 0.8
    out=$(/work/main/target/release/jetbench js-pub-sync --url nats://127.0.0.1:4444 --duration ${S}s 2>&1 | grep -E "msgs/s|latency")
    echo "round $r $v $(echo $out | tr -s ' ')"
    pkill -x jetcore; sleep 0.3; rm -rf $D
  done
done
unset JETCORE_NO_SPARE
