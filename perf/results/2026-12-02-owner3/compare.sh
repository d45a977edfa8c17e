#!/usr/bin/env bash
# JS publish: nats-server, jetcore base (main's commit), jetcore owner3, alternating rounds.
cd "$(dirname "$0")/../../.."
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
rounds=${ROUNDS:-5}
for round in $(seq 1 $rounds); do
 for server in nats base new; do
  d=$(mktemp -d); port=$((5200+round))
  case $server in
   nats) /work/venv/bin/nats-server -js -sd $d -p $port >/dev/null 2>&1 & ;;
   base) /tmp/owner3_base/jetcore -sd $d -p $port $JETCORE_ARGS >/dev/null 2>&1 & ;;
   new) /tmp/owner3_new/jetcore -sd $d -p $port $JETCORE_ARGS >/dev/null 2>&1 & ;;
  esac
  pid=$!; sleep 1
  msgs=300000
  c0=$(cpu $pid)
  rate=$(target/release/jetbench js-pub --url nats://127.0.0.1:$port --size 128 --msgs $msgs --quiet 2>&1 | grep -oE '[0-9,]+ msgs/s' | head -1 | tr -d ',' | cut -d' ' -f1)
  c1=$(cpu $pid)
  echo "round $round $server js-pub ${rate} msg/s, server CPU $(( (c1-c0)*10000000 / msgs )) ns/msg"
  c0=$(cpu $pid)
  out=$(target/release/jetbench js-pub-sync --url nats://127.0.0.1:$port --size 128 --duration 3s --quiet 2>&1)
  c1=$(cpu $pid)
  acked=$(echo "$out" | grep -oE 'acknowledged [0-9]+' | grep -oE '[0-9]+')
  echo "round $round $server js-pub-sync $(echo "$out" | grep -oE '[0-9,]+ msgs/s' | head -1 | tr -d ,)," \
    "p50 $(echo "$out" | grep -oE 'p50 [0-9.]+' | cut -d' ' -f2) us, p99 $(echo "$out" | grep -oE 'p99 [0-9.]+' | cut -d' ' -f2) us," \
    "server CPU $(( (c1-c0)*10000 / (acked>0 ? acked : 1) )) us/msg"
  kill $pid; wait $pid 2>/dev/null; rm -rf $d
 done
done
