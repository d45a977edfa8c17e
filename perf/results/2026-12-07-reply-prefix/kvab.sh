#!/bin/bash
# alternating KV puts: stand-in, and each BIN given
for r in $(seq 1 ${R:-3}); do
  D=$(mktemp -d /tmp/kvs-XXXX)
  /work/main/target/release/examples/durable_standin 4445 $D >/dev/null 2>&1 &
  SP=$!; sleep 1.5
  echo "round $r standin $(/work/main/target/release/examples/asyncnats_kv nats://127.0.0.1:4445 ${PUTS:-6000} 0)"
  kill $SP; wait $SP 2>/dev/null; rm -rf $D
  for b in "$@"; do
    D=$(mktemp -d /tmp/kv-XXXX)
    $b -sd $D -p 4444 -m 5444 >/dev/null 2>&1 &
    SP=$!; sleep 0.8
    echo "round $r $(basename $b) $(/work/main/target/release/examples/asyncnats_kv nats://127.0.0.1:4444 ${PUTS:-6000} 0)"
    kill $SP; wait $SP 2>/dev/null; rm -rf $D
  done
done
