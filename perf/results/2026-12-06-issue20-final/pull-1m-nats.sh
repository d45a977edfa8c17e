#!/bin/bash
cd /tmp/pl
for r in 1 2 3; do
 rm -rf nd; /work/venv/bin/nats-server -a 127.0.0.1 -p 4445 -js -sd /tmp/pl/nd >/dev/null 2>&1 & P=$!
 sleep 0.8; c0=$(awk '{print $14+$15}' /proc/$P/stat)
 /work/main/target/release/jetbench js-pull --url nats://127.0.0.1:4445 --size 128 --msgs 1000000 --stream ST0 --quiet > jbn.txt 2>&1
 c1=$(awk '{print $14+$15}' /proc/$P/stat)
 echo "nats $(grep -oE '[0-9,]+ msgs/s' jbn.txt | tr '\n' ' ') ticks $((c1-c0))"
 kill $P; wait $P 2>/dev/null
done
