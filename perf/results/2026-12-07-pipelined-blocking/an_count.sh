#!/bin/bash
# usage: an_count.sh BIN [args]: syscall counts per thread over 1 s of the async-nats publish phase (perf stat tracepoints)
BIN=$1; shift
D=$(mktemp -d /tmp/anr-XXXX)
$BIN -sd $D -p 4444 -m 5444 "$@" >/dev/null 2>&1 &
SP=$!
sleep 0.8
/work/main/target/release/examples/asyncnats_js nats://127.0.0.1:4444 ${N:-600000} 128 AN > /tmp/pl/ancount.client &
CP=$!
sleep 1.0
E=""; for s in io_uring_enter recvfrom sendto pwritev2 membarrier ppoll; do E="$E,syscalls:sys_enter_$s"; done
perf stat -e "${E#,}",context-switches --per-thread -p $SP -o /tmp/pl/ancount.out -- sleep 1
wait $CP; cat /tmp/pl/ancount.client
kill $SP; wait $SP 2>/dev/null; rm -rf $D
grep -E "shard" /tmp/pl/ancount.out | awk '$2>100'
