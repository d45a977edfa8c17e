#!/bin/bash
# usage: jbvar.sh ROUNDS "jetbench args" "ENV.." ...: jetbench per env variant, server ticks, groups, blocking writes
R=$1; ARGS=$2; shift 2
for r in $(seq 1 $R); do for v in "$@"; do
  D=$(mktemp -d /tmp/jbv-XXXX)
  env $v /work/main/target/release/jetcore -sd $D -p 4444 -m 5444 >/dev/null 2>&1 &
  SP=$!; sleep 0.8
  T0=$(awk '{print $14+$15}' /proc/$SP/stat)
  out=$(/work/main/target/release/jetbench --url nats://127.0.0.1:4444 $ARGS 2>&1 | grep -E "msgs/s" | head -1 | tr -s ' ')
  T1=$(awk '{print $14+$15}' /proc/$SP/stat)
  m=$(curl -s localhost:5444/metrics)
  g=$(echo "$m" | awk '/^jetcore_store_group_commit_records_count\{shard="[01]",storage="file"\}/{s+=$2} END{print s}')
  b=$(echo "$m" | awk '/^jetcore_store_blocking_writes_total/{s+=$2} END{print s}')
  fs=$(echo "$m" | awk '/^jetcore_store_fdatasync_seconds_count\{shard="[01]",storage="file"\}/{s+=$2} END{print s}')
  echo "r$r [$v] $out ticks $((T1-T0)) groups $g blocking $b fdatasyncs $fs"
  kill $SP; wait $SP 2>/dev/null; rm -rf $D
done; done
