#!/bin/bash
# js-pull 1M: default 2 shards (stream ST0, ST1) vs --shards 1; per-thread ticks
cd /tmp/pl
run() { # label extra-args stream
 rm -rf pd; /work/main/target/release/jetcore -a 127.0.0.1 -p 4444 -m 8444 -js -sd /tmp/pl/pd $2 >/dev/null 2>&1 & P=$!
 sleep 0.6
 snap(){ for t in /proc/$P/task/*; do echo "$(cat $t/comm)@$(basename $t) $(awk '{print $14+$15, $39}' $t/stat)"; done | sort; }
 snap > a.txt
 ( sleep 1.0; curl -s "localhost:8444/connz" > connz.json ) & C=$!
 /work/main/target/release/jetbench js-pull --url nats://127.0.0.1:4444 --size 128 --msgs ${MSGS:-1000000} --stream $3 --quiet > jb.txt 2>&1
 wait $C; snap > b.txt
 CONNS=$(python3 -c 'import json; print([(c["cid"]%2, c.get("in_msgs"), c.get("out_msgs")) for c in json.load(open("connz.json"))["connections"]])' 2>/dev/null)
 TH=$(awk 'NR==FNR{a[$1]=$2; next} ($2-a[$1])>3 {printf "%s:cpu%s=%d ", $1, $3, $2-a[$1]}' a.txt b.txt)
 echo "$1 $3 $(grep -oE '[0-9,]+ msgs/s' jb.txt | tr '\n' ' ') conns=$CONNS $TH"
 kill $P; wait $P 2>/dev/null
}
for r in $(seq 1 ${ROUNDS:-3}); do
 run default "" ST0; run default "" ST1; run shards1 "--shards 1" ST0
done
