#!/bin/bash
# Issue 21 item 4: memory-storage publish→push latency at 10 k/s beside its floors, same run.
# Per round, alternating: the loopback floor (no server: jetbench relays the bytes itself),
# core pub→sub through nats-server and jetcore, and memory stream publish→push consumer
# through nats-server, jetcore (default: one shard per CPU) and jetcore --shards 1.
# Defaults, unpinned; server CPU = utime+stime ticks (10 ms) of the server process.
cd "$(dirname "$0")/../../.."
NATS=${NATS_SERVER:-/work/venv/bin/nats-server}
ROUNDS=${ROUNDS:-3}
bench() { target/release/jetbench latency "$@" --rate 10000 --duration 10s --size 128 --quiet 2>&1 | grep -E "latency us" | tr '\n' ' '; }
for round in $(seq 1 "$ROUNDS"); do
  echo "round $round loopback - $(bench --via loopback)"
  for via in core stream; do
    for server in nats jetcore jetcore1; do
      [ $via = core ] && [ $server = jetcore1 ] && continue
      d=$(mktemp -d); port=$((14000 + RANDOM % 1000))
      case $server in
        nats) $NATS -a 127.0.0.1 -p $port -js -sd $d/data >/dev/null 2>&1 & ;;
        jetcore) target/release/jetcore -a 127.0.0.1 -p $port -js -sd $d/data >/dev/null 2>&1 & ;;
        jetcore1) target/release/jetcore --shards 1 -a 127.0.0.1 -p $port -js -sd $d/data >/dev/null 2>&1 & ;;
      esac
      pid=$!; sleep 1
      t0=$(awk '{print $14+$15}' /proc/$pid/stat)
      out=$(bench --url nats://127.0.0.1:$port --via $via --storage memory)
      t1=$(awk '{print $14+$15}' /proc/$pid/stat)
      echo "round $round $via $server cpu_ticks=$((t1-t0)) $out"
      kill $pid; wait $pid 2>/dev/null; rm -rf $d
    done
  done
done
