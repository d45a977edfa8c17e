#!/usr/bin/env bash
# Session-12 quiet comparison: nats-server -js, jetcore at session start (b7fe7b4), jetcore
# now, and jetcore now with the old 100 us spin before parking; default config, unpinned,
# alternating, 128 B jetbench core pub->sub and JS async publish; server CPU from /proc.
cd /work/main
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
rounds=${ROUNDS:-4}
for round in $(seq 1 $rounds); do
 for server in nats base now spin; do
  d=$(mktemp -d); port=$((5300+round))
  case $server in
   nats) /work/venv/bin/nats-server -js -sd $d -p $port >/dev/null 2>&1 & ;;
   base) /tmp/jetcore-base-b7fe7b4 -sd $d -p $port >/dev/null 2>&1 & ;;
   now) target/release/jetcore -sd $d -p $port >/dev/null 2>&1 & ;;
   spin) JETCORE_SPIN_BEFORE_PARK_US=100 target/release/jetcore -sd $d -p $port >/dev/null 2>&1 & ;;
  esac
  pid=$!; sleep 1
  for sc in pubsub js-pub; do
    msgs=2000000; [[ $sc == js-pub ]] && msgs=300000
    c0=$(cpu $pid)
    rate=$(target/release/jetbench $sc --url nats://127.0.0.1:$port --size 128 --msgs $msgs --quiet 2>&1 | grep -oE '[0-9,]+ msgs/s' | head -1 | tr -d ',' | cut -d' ' -f1)
    c1=$(cpu $pid)
    echo "round $round $server $sc ${rate} msg/s, server CPU $(( (c1-c0)*10000000 / msgs )) ns/msg"
  done
  kill $pid; wait $pid 2>/dev/null; rm -rf $d
 done
done
