#!/bin/bash
# usage: anvar.sh ROUNDS "ENV=.. ENV2=.." ... : async-nats 300k publish-then-consume, per env variant, with group metrics
R=$1; shift
for r in $(seq 1 $R); do for v in "$@"; do
  D=$(mktemp -d /tmp/anv-XXXX)
  env $v /work/main/target/release/jetcore -sd $D -p 4444 -m 5444 >/dev/null 2>&1 &
  SP=$!; sleep 0.8
  T0=$(awk '{print $14+$15}' /proc/$SP/stat)
  out=$(/work/main/target/release/examples/asyncnats_js nats://127.0.0.1:4444 ${N:-300000} 128 AN)
  T1=$(awk '{print $14+$15}' /proc/$SP/stat)
  m=$(curl -s localhost:5444/metrics)
  g=$(echo "$m" | awk '/^jetcore_store_group_commit_records_count\{shard="1",storage="file"\}/{print $2}')
  ap=$(echo "$m" | awk '/^jetcore_store_append_seconds_sum\{shard="1",storage="file"\}/{print $2}')
  fs=$(echo "$m" | awk '/^jetcore_store_fdatasync_seconds_count\{shard="1",storage="file"\}/{print $2}')
  fss=$(echo "$m" | awk '/^jetcore_store_fdatasync_seconds_sum\{shard="1",storage="file"\}/{print $2}')
  pub=$(echo $out | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["publish_msgs_per_s"])')
  echo "r$r [$v] pub/s $pub ticks $((T1-T0)) groups $g append_us $(python3 -c "print(round($ap/$g*1e6))") fdatasyncs $fs fds_us $(python3 -c "print(round($fss/max($fs,1)*1e6))")"
  kill $SP; wait $SP 2>/dev/null; rm -rf $D
done; done
