#!/usr/bin/env python3
"""Where a one-in-flight durable publish spends its time, from the kernel's io_uring
tracepoints (perf/latency.md). Every step of jetcore's publish path is an io_uring
operation, so the kernel's submit and complete events are timestamps at each step, taken
without changing the server:

  recv done (the PUB arrived) → write submitted → write done → fdatasync submitted →
  fdatasync done → ack send submitted → send done

Record while a one-in-flight client runs (root; jetcore started before):
  perf record -o trace.data -e io_uring:io_uring_submit_req -e io_uring:io_uring_complete \\
      -e io_uring:io_uring_queue_async_work -p "$(pidof jetcore)" -- sleep 3 &
  target/release/jetbench js-pub-sync --duration 2s --quiet
  perf script -i trace.data > trace.txt
  tools/uring-trace.py trace.txt

Prints the median, p90 and p99 of each step over the publishes seen. Works for any
server whose I/O goes through io_uring; nats-server's does not (it uses plain syscalls).
"""

from __future__ import annotations

import re
import statistics
import sys

EVENT = re.compile(r"\s(\d+\.\d+):\s+io_uring:(io_uring_\w+):\s.*?req (0x[0-9a-f]+)(.*)$")
OPCODE = re.compile(r"opcode (\w+)")
RESULT = re.compile(r"result (-?\d+)")
FILE_WRITES = {"WRITE", "WRITE_FIXED", "WRITEV"}
SOCKET_RECEIVES = {"RECV", "RECVMSG", "READ"}
SOCKET_SENDS = {"SEND", "SENDMSG", "SEND_ZC"}
FSYNC = "FSYNC"


def parse(lines):
    """Yields (time_us, kind, opcode, result) with kind submit/async/complete."""
    opcode_of = {}
    for line in lines:
        match = EVENT.search(line)
        if not match:
            continue
        time_us, event, request, rest = float(match[1]) * 1e6, match[2], match[3], match[4]
        if event in ("io_uring_submit_req", "io_uring_queue_async_work"):
            opcode = OPCODE.search(rest)
            if opcode:
                opcode_of[request] = opcode[1]
            yield time_us, "submit" if event == "io_uring_submit_req" else "async", opcode_of.get(request), None
        elif event == "io_uring_complete":
            result = RESULT.search(rest)
            yield time_us, "complete", opcode_of.pop(request, None), int(result[1]) if result else None


def cycles(events):
    """One dict of step timestamps per fdatasync, from the events around it."""
    last_receive = None
    current = None
    for time_us, kind, opcode, result in events:
        if kind == "complete" and opcode in SOCKET_RECEIVES and (result or 0) > 0:
            last_receive = time_us
        elif kind == "submit" and opcode in FILE_WRITES and current is None:
            current = {"receive_done": last_receive, "write_submitted": time_us}
        elif current is None:
            continue
        elif kind == "complete" and opcode in FILE_WRITES and "write_done" not in current:
            current["write_done"] = time_us
        elif kind == "submit" and opcode == FSYNC and "sync_submitted" not in current:
            current["sync_submitted"] = time_us
        elif kind == "async" and opcode == FSYNC and "sync_queued" not in current:
            current["sync_queued"] = time_us
        elif kind == "complete" and opcode == FSYNC and "sync_submitted" in current:
            current["sync_done"] = time_us
        elif kind == "submit" and opcode in SOCKET_SENDS and "sync_done" in current:
            current["send_submitted"] = time_us
        elif kind == "complete" and opcode in SOCKET_SENDS and "send_submitted" in current:
            current["send_done"] = time_us
            yield current
            current = None


STEPS = [
    ("PUB received → write submitted (parse, route, append, seal)", "receive_done", "write_submitted"),
    ("write submitted → write done (O_DIRECT 4 KiB)", "write_submitted", "write_done"),
    ("write done → fdatasync submitted", "write_done", "sync_submitted"),
    ("fdatasync submitted → done", "sync_submitted", "sync_done"),
    ("fdatasync done → ack send submitted", "sync_done", "send_submitted"),
    ("ack send submitted → done", "send_submitted", "send_done"),
    ("PUB received → ack sent (server total)", "receive_done", "send_done"),
]


def main() -> int:
    with open(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdin") as trace:
        found = [cycle for cycle in cycles(parse(trace)) if cycle.get("receive_done") is not None]
    if not found:
        print("no complete publish cycle found (is the server's I/O on io_uring?)")
        return 1
    queued = sum(1 for cycle in found if "sync_queued" in cycle)
    print(f"{len(found)} publishes; fdatasync handed to an io-wq worker in {queued}")
    print("| step | p50 µs | p90 µs | p99 µs |")
    print("|---|---:|---:|---:|")
    for label, start, end in STEPS:
        spans = sorted(cycle[end] - cycle[start] for cycle in found if start in cycle and end in cycle)
        if not spans:
            continue
        pick = lambda quantile: spans[min(len(spans) - 1, int(quantile * len(spans)))]
        print(f"| {label} | {statistics.median(spans):.0f} | {pick(0.9):.0f} | {pick(0.99):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
