#!/bin/bash
# consume-phase rate and server CPU ns/msg of js-pull, nats-server vs jetcore, alternating
JB=${JB:-/work/main/target/release/jetbench}; JC=${JC:-/work/main/target/release/jetcore}
M=${MSGS:-2000000}
cpu(){ awk '{printf "%.0f", ($14+$15)*10000000}' /proc/$1/stat; }
one(){ # label
  rm -rf dd
  if [ $1 = nats ]; then /work/venv/bin/nats-server -a 127.0.0.1 -p 4444 -m 8444 -js -sd /tmp/pl/dd >srv.log 2>&1 & P=$!
  elif [ $1 = base ]; then /tmp/pl/jetcore.base -a 127.0.0.1 -p 4444 -m 8444 -js -sd /tmp/pl/dd ${EXTRA} >srv.log 2>&1 & P=$!
  else /tmp/pl/jetcore.new -a 127.0.0.1 -p 4444 -m 8444 -js -sd /tmp/pl/dd ${EXTRA} >srv.log 2>&1 & P=$!; fi
  sleep 0.8; kill -0 $P 2>/dev/null || { echo "$1: server did not start"; tail -2 srv.log; exit 1; }
  $JB js-pull --url nats://127.0.0.1:4444 --size 128 --msgs $M --stream ${ST:-ST0} --quiet > jb.txt 2>&1 & B=$!
  while true; do
    n=$(curl -s localhost:8444/jsz | python3 -c 'import json,sys; print(json.load(sys.stdin).get("messages",0))' 2>/dev/null)
    [ "${n:-0}" -ge $M ] && break; sleep 0.02
  done
  c0=$(cpu $P); wait $B; c1=$(cpu $P)
  echo "$1 $(grep -oE '[0-9,]+ msgs/s' jb.txt) cpu_ns_per_msg=$(( (c1-c0)/M ))"
  kill $P; wait $P 2>/dev/null
}
for r in $(seq 1 ${ROUNDS:-3}); do for s in ${SERVERS:-nats jetcore}; do one $s; done; done
