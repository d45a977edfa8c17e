#!/bin/bash
# CPU of server and client during the snapshot phase; $1 = jetcore|nats
set -e
d=$(mktemp -d /work/main/target/prof.XXXX)
if [ "$1" = jetcore ]; then /work/main/target/release/jetcore -sd $d/store -p 5351 > $d/log 2>&1 &
else /work/venv/bin/nats-server -js -sd $d/store -p 5351 > $d/log 2>&1 & fi
pid=$!
sleep 0.5
/work/main/target/release/examples/asyncnats_backup nats://127.0.0.1:5351 ${MIB:-512} > $d/out.json &
cpid=$!
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
for i in $(seq 1 2000); do grep -q -i "Starting snapshot" $d/log && break; sleep 0.01; done
s0=$(cpu $pid); c0=$(cpu $cpid); t0=$(date +%s.%N)
for i in $(seq 1 2000); do grep -q -i "Completed snapshot\|Starting restore" $d/log && break; sleep 0.01; done
s1=$(cpu $pid); c1=$(cpu $cpid); t1=$(date +%s.%N)
wait $cpid
python3 -c "import json;d=json.load(open('$d/out.json'));print('$1', 'snap MiB/s %.0f restore %.0f (upload %.2fs total %.2fs)'%(d['snapshot_mib_per_s'],d['restore_mib_per_s'],d['restore_upload_s'],d['restore_s']), 'wall %.2f server cpu %.2f client cpu %.2f'%($t1-$t0, ($s1-$s0)/100, ($c1-$c0)/100))"
kill $pid; wait $pid 2>/dev/null || true
rm -rf $d
