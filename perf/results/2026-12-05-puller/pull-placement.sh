#!/bin/bash
# one js-pull run on 2 shards; prints stream, connection shards, consume time, per-thread CPU ticks
S=$1
cd /tmp/pl
rm -rf pd; /work/main/target/release/jetcore -a 127.0.0.1 -p 4444 -m 8444 -js -sd /tmp/pl/pd >/dev/null 2>&1 & P=$!
sleep 0.6
snap(){ for t in /proc/$P/task/*; do echo "$(cat $t/comm)@$(basename $t) $(awk '{print $14+$15, $39}' $t/stat)"; done | sort; }
snap > a.txt
( sleep 1.0; curl -s "localhost:8444/connz" > connz.json ) & C=$!
if [ -n "$PERF" ]; then perf sched record -o /tmp/pl/sched.$S.data -- /work/main/target/release/jetbench js-pull --url nats://127.0.0.1:4444 --size 128 --msgs 1000000 --stream $S --json /tmp/pl/out.json --quiet > /tmp/pl/jb.txt 2>&1
else /work/main/target/release/jetbench js-pull --url nats://127.0.0.1:4444 --size 128 --msgs 1000000 --stream $S --json /tmp/pl/out.json --quiet > /tmp/pl/jb.txt 2>&1; fi
wait $C
snap > b.txt
CONNS=$(python3 -c 'import json; print([(c["cid"]%2, c.get("in_msgs"), c.get("out_msgs")) for c in json.load(open("connz.json"))["connections"]])' 2>/dev/null)
TH=$(awk 'NR==FNR{a[$1]=$2; next} ($2-a[$1])>3 {printf "%s:cpu%s=%d ", $1, $3, $2-a[$1]}' a.txt b.txt)
echo "$S consume=$(grep -oE '[0-9.]+ s ' jb.txt | head -1) conns=$CONNS $TH"
kill $P; wait $P 2>/dev/null
