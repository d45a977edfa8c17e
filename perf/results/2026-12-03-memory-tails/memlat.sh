#!/bin/bash
# memory-storage publish→push-consume latency at 10k/s, alternating servers
cd /work/main
for round in 1 2 3; do
for server in nats jetcore jetcore1; do
  d=$(mktemp -d); port=$((14000 + RANDOM % 1000))
  if [ $server = nats ]; then /work/venv/bin/nats-server -a 127.0.0.1 -p $port -js -sd $d/data >/dev/null 2>&1 & 
  elif [ $server = jetcore ]; then target/release/jetcore -a 127.0.0.1 -p $port -js -sd $d/data >/dev/null 2>&1 &
  else target/release/jetcore --shards 1 -a 127.0.0.1 -p $port -js -sd $d/data >/dev/null 2>&1 & fi
  pid=$!; sleep 1
  t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  out=$(target/release/jetbench latency --url nats://127.0.0.1:$port --via stream --storage memory --rate 10000 --duration 10s --size 128 2>&1 | grep -iE "p50|p99|latency|msgs" | tr '\n' ' ')
  t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  echo "round $round $server cpu_ticks=$((t1-t0)) $out"
  kill $pid; wait $pid 2>/dev/null; rm -rf $d
done; done
