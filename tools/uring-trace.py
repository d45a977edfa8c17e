#!/usr/bin/env python3
"""Where a one-in-flight durable publish spends its time, from the kernel's io_uring
tracepoints (perf/latency.md). Every step of jetcore's publish path is an io_uring
operation, so the kernel's submit and complete events are timestamps at each step, taken
without changing the server:

  PUB read (recvfrom) → group write submitted → write done → fdatasync submitted →
  io-wq worker runs it → fdatasync done → ack sent (sendto)

Record while a one-in-flight client runs (root; jetcore started before):
  perf record -o trace.data -e io_uring:io_uring_submit_req -e io_uring:io_uring_complete \\
      -e syscalls:sys_exit_recvfrom -e syscalls:sys_enter_sendto -e sched:sched_wakeup \\
      -p "$(pidof jetcore)" -- sleep 3 &
  target/release/jetbench js-pub-sync --duration 2s --quiet
  perf script -i trace.data > trace.txt
  tools/uring-trace.py trace.txt

Prints the median, p90 and p99 of each step over the publishes seen (one shard: with
several, the PUB's shard and the stream's must be the same for the steps to pair up; run
jetcore with `--shards 1`, or read the thread names in the trace).
"""

from __future__ import annotations

import re
import statistics
import sys

EVENT = re.compile(r"^\s*(\S+)\s+\d+\s+\[\d+\]\s+(\d+\.\d+):\s+(\w+):(\w+):\s?(.*)$")
REQUEST = re.compile(r"req(?:uest)? (0x[0-9a-f]+)")
OPCODE = re.compile(r"opcode (\w+)")
RESULT = re.compile(r"result (-?\d+)")
FILE_WRITE = "WRITE_FIXED"  # glommio writes DMA files from registered buffers
FSYNC = "FSYNC"


def parse(lines):
    """Yields (time_us, thread, step) for the events that mark a step of the path."""
    opcode_of = {}
    for line in lines:
        match = EVENT.match(line)
        if not match:
            continue
        thread, time_us, system, event, rest = match[1], float(match[2]) * 1e6, match[3], match[4], match[5]
        if thread.startswith("iou-wrk"):
            yield time_us, thread, "worker_ran"
        if system == "syscalls":
            if event == "sys_exit_recvfrom" and not rest.strip().startswith("0xffff") and rest.strip() != "0x0":
                yield time_us, thread, "receive_done"
            elif event in ("sys_enter_sendto", "sys_enter_write", "sys_enter_writev"):
                yield time_us, thread, "send_submitted"
            continue
        if system != "io_uring":
            continue
        request = REQUEST.search(rest)
        request = request[1] if request else None
        if event == "io_uring_submit_req":
            opcode = OPCODE.search(rest)
            opcode_of[request] = opcode[1] if opcode else None
            if opcode_of[request] == FILE_WRITE:
                yield time_us, thread, "write_submitted"
            elif opcode_of[request] == FSYNC:
                yield time_us, thread, "sync_submitted"
        elif event == "io_uring_queue_async_work" and opcode_of.get(request) == FSYNC:
            yield time_us, thread, "sync_queued"
        elif event == "io_uring_complete":
            opcode = opcode_of.pop(request, None)
            if opcode == FILE_WRITE:
                yield time_us, thread, "write_done"
            elif opcode == FSYNC:
                yield time_us, thread, "sync_done"


ORDER = ["receive_done", "write_submitted", "write_done", "sync_submitted", "worker_ran", "sync_done",
         "send_submitted"]


def cycles(events):
    """One dict of step timestamps per publish: the steps in ORDER, each the first event of
    its kind after the previous step (a cycle that skips a step is dropped)."""
    current, last_send = None, None
    for time_us, _thread, step in events:
        if step == "receive_done":
            current = {"receive_done": time_us}
            if last_send is not None:
                current["previous_send"] = last_send
            continue
        if current is None:
            continue
        expected = ORDER[len([key for key in current if key in ORDER])]
        if step == expected:
            current[step] = time_us
            if step == "send_submitted":
                last_send = time_us
                yield current
                current = None


STEPS = [
    ("PUB read → group write submitted (parse, route, append, seal)", "receive_done", "write_submitted"),
    ("write submitted → done (O_DIRECT 4 KiB, io_uring)", "write_submitted", "write_done"),
    ("write done → fdatasync submitted", "write_done", "sync_submitted"),
    ("fdatasync submitted → io-wq worker runs", "sync_submitted", "worker_ran"),
    ("worker runs → fdatasync done", "worker_ran", "sync_done"),
    ("fdatasync done → ack sent (wake, complete group, encode ack)", "sync_done", "send_submitted"),
    ("PUB read → ack sent: the server's part", "receive_done", "send_submitted"),
    ("ack sent → next PUB read: loopback and client", "previous_send", "receive_done"),
]


def main() -> int:
    with open(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdin") as trace:
        found = list(cycles(parse(trace)))
    if not found:
        print("no complete publish cycle found (is the server's I/O on io_uring?)")
        return 1
    print(f"{len(found)} publishes traced")
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
