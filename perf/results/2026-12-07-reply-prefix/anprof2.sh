#!/bin/bash
# usage: anprof2.sh BIN OUTPREFIX [extra server args]: profile 1.5 s of async-nats's publish phase (1M msgs)
BIN=$1; OUT=$2; shift 2
D=$(mktemp -d /tmp/anp-XXXX)
$BIN -sd $D -p 4444 -m 5444 "$@" >/dev/null 2>&1 &
SP=$!
sleep 1
/work/main/target/release/examples/asyncnats_js nats://127.0.0.1:4444 1000000 128 AN > $OUT.client.txt &
CP=$!
sleep 1.2
perf record -F 2999 --call-graph dwarf,16384 -p $SP -o $OUT.data -- sleep 1.5 >/dev/null 2>&1
wait $CP
cat $OUT.client.txt
kill $SP; wait $SP 2>/dev/null; rm -rf $D
