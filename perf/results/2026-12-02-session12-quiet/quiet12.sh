#!/usr/bin/env bash
# The session-12 quiet run, one after another; results into perf/results/2026-12-02-session12-quiet/.
cd /work/main
out=perf/results/2026-12-02-session12-quiet
mkdir -p $out
export NATS_SERVER=/work/venv/bin/nats-server
{ echo "# load at start: $(cat /proc/loadavg)"; ROUNDS=3 /work/notes/quiet_cmp12.sh; } > $out/quick-compare.txt 2>&1
{ echo "# load at start: $(cat /proc/loadavg)"; ROUNDS=3 tools/accounts/bench-accounts; } > $out/accounts.txt 2>&1
{ echo "# load at start: $(cat /proc/loadavg)"; python3 perf/shards.py --rounds 3 --async-nats --base /tmp/jetcore-base-b7fe7b4; } > $out/shards.txt 2>&1
{ echo "# load at start: $(cat /proc/loadavg)"; perf/latency --rounds 3 --seconds 3; } > $out/latency.txt 2>&1
echo QUIET-DONE
