#!/bin/bash
N=${1:-100000}
d=$(mktemp -d /work/main/target/mir.XXXX)
/work/venv/bin/nats-server -a 127.0.0.1 -p 4466 -js -sd $d > /dev/null 2>&1 & P=$!
sleep 0.5
/work/main/target/release/jetbench js-pub --url nats://127.0.0.1:4466 --size 128 --msgs $N --stream SRC --keep-streams --quiet > /dev/null 2>&1
timeout 120 /work/venv/bin/python /tmp/pl/mirror.py nats://127.0.0.1:4466 $N
kill $P; wait $P 2>/dev/null; rm -rf $d
