#!/bin/bash
# usage: cgjs.sh BIN OUT [N]: callgrind's instruction count per one-in-flight JS publish (jetbench js-pub-sync; its run makes its stream) on a --shards 1 server
B=$1; OUT=$2; N=${3:-3000}
JB=/work/main/target/release/jetbench
D=$(mktemp -d /tmp/vg-XXXX)
valgrind --tool=callgrind --compress-strings=no --compress-pos=no --callgrind-out-file=$OUT.%p $B -sd $D -p 4444 -m 5444 --shards 1 > $OUT.log 2>&1 &
VP=$!
for i in $(seq 1 60); do grep -q "Server is ready" $OUT.log && break; sleep 1; done
$JB --url nats://127.0.0.1:4444 js-pub-sync --msgs 200 2>&1 | tail -2
callgrind_control -d $VP >/dev/null
$JB --url nats://127.0.0.1:4444 js-pub-sync --msgs $N 2>&1 | tail -3
callgrind_control -d $VP >/dev/null
kill -9 $VP; wait $VP 2>/dev/null; rm -rf $D
F=$(ls $OUT.*.2)
T=$(callgrind_annotate $F 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
echo "$(basename $B) instructions per publish: $((T / N)) ($F)"
