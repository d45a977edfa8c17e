#!/bin/bash
# usage: anrun.sh BIN [server args] -- one async-nats publish-then-consume of 300k against BIN (or "ceiling-d")
BIN=$1; shift
N=${N:-300000}
if [ "$BIN" = ceiling-d ]; then D=$(mktemp -d /tmp/anc-XXXX); /work/main/target/release/examples/js_ceiling $N 128 $D; rm -rf $D; exit; fi
D=$(mktemp -d /tmp/anr-XXXX)
$BIN -sd $D -p 4444 -m 5444 "$@" >/dev/null 2>&1 &
SP=$!
sleep 0.8
T0=$(awk '{print $14+$15}' /proc/$SP/stat)
/work/main/target/release/examples/asyncnats_js nats://127.0.0.1:4444 $N 128 AN
T1=$(awk '{print $14+$15}' /proc/$SP/stat)
echo "server_ticks=$((T1-T0)) ns_per_msg=$(( (T1-T0)*10000000/N ))"
kill $SP; wait $SP 2>/dev/null; rm -rf $D
