#!/bin/bash
# usage: [BLOCK=1] kvcount.sh standin|BIN: syscall counts of the server (BLOCK=1: the machine's block
# requests) over 2 s of one-in-flight KV puts
B=$1
D=$(mktemp -d /tmp/kvc-XXXX)
if [ "$B" = standin ]; then /work/main/target/release/examples/durable_standin 4444 $D >/dev/null 2>&1 & else $B -sd $D -p 4444 -m 5444 --shards 1 >/dev/null 2>&1 & fi
SP=$!; sleep 1.2
/work/main/target/release/examples/asyncnats_kv nats://127.0.0.1:4444 ${PUTS:-12000} 0 > /tmp/pl/kvc.client &
CP=$!; sleep 1.0
if [ -n "$BLOCK" ]; then
  # block requests of the whole machine per durable write
  perf stat -a -e block:block_rq_issue,block:block_rq_complete,syscalls:sys_enter_pwritev2 -o /tmp/pl/kvc.out -- sleep 2
else
  E=""; for s in io_uring_enter recvfrom read sendto write writev pwritev2 membarrier ppoll poll epoll_wait futex; do E="$E,syscalls:sys_enter_$s"; done
  perf stat -e "${E#,}",context-switches,task-clock -p $SP -o /tmp/pl/kvc.out -- sleep 2
fi
wait $CP; cat /tmp/pl/kvc.client; echo
awk '$1 ~ /^[0-9,.]+$/ && $1 != "0" {print $1, $2}' /tmp/pl/kvc.out
kill $SP; wait $SP 2>/dev/null; rm -rf $D
