#!/usr/bin/env python3
"""Summarizes bench-accounts' lines: per server and scenario, the medians of each variant and
the medians of the per-round ratios (account / default). Rates drift between rounds more
than an account costs; each round runs both variants back to back, so the per-round ratio
is the figure to read."""
import collections
import re
import statistics
import sys

LINE = re.compile(r"round (\d+) (\w+) (\w+) ([\w-]+) (\d+) msg/s, server CPU (\d+) ns/msg")

runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    m = LINE.match(line)
    if m:
        runs[(m[3], m[4], m[2])][int(m[1])] = (int(m[5]), int(m[6]))
print("| server | scenario | msg/s default / account | CPU ns/msg default / account "
      "| per-round rate ratio (median, range) | per-round CPU ratio (median, range) |")
print("|---|---|---:|---:|---:|---:|")
for server in ("nats", "jetcore"):
    for scenario in ("pubsub", "js-pub"):
        default, account = runs[(server, scenario, "default")], runs[(server, scenario, "accounts")]
        rounds = sorted(set(default) & set(account))
        if not rounds:
            continue
        rate = [statistics.median(r for r, _ in v.values()) for v in (default, account)]
        cpu = [statistics.median(c for _, c in v.values()) for v in (default, account)]
        rate_ratios = [account[n][0] / default[n][0] for n in rounds]
        cpu_ratios = [account[n][1] / default[n][1] for n in rounds]
        print(f"| {server} | {scenario} | {rate[0]:,.0f} / {rate[1]:,.0f} | {cpu[0]:,.0f} / {cpu[1]:,.0f} "
              f"| {statistics.median(rate_ratios):.3f} ({min(rate_ratios):.2f}–{max(rate_ratios):.2f}) "
              f"| {statistics.median(cpu_ratios):.3f} ({min(cpu_ratios):.2f}–{max(cpu_ratios):.2f}) |")
