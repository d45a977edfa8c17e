#!/usr/bin/env bash
# js-pub only, nats / base / new alternating; order rotated each round.
cd "$(dirname "$0")/../../.."
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
orders=("nats base new" "new nats base" "base new nats")
for round in $(seq 1 ${ROUNDS:-10}); do
 for server in ${orders[$((round % 3))]}; do
  d=$(mktemp -d); port=$((5300+round))
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
  kill $pid; wait $pid 2>/dev/null; rm -rf $d
 done
done
echo DONE
