#!/usr/bin/env python3
"""Shard placement and its cost (issue 20), in one command.

Rounds alternate three servers in their default configuration, unpinned:
nats-server -js, jetcore (one shard per CPU) and jetcore --shards 1. Each round runs
jetbench (128 B) core pub->sub, JS async publish (file) and publish-then-pull-consume
(ack none) against a fresh data directory; with --async-nats also the same
publish-then-consume through async-nats 0.51 (`tools/jetbench/examples/asyncnats_js.rs`:
`jetstream::Context::publish`, a reply inbox per message, 256 acks outstanding; scenario
"an-js", its rate over both phases, and each phase alone: "an-pub" the publish phase,
"an-pull" the consume phase, as issue 20's targets name them), with the client's own
ceiling for it each round
(server "ceiling": the same phases against a stand-in that stores nothing,
`tools/jetbench/examples/js_ceiling.rs`; "ceiling-d": the same stand-in durable, one
`RWF_DSYNC` write per read of publishes before their acks, a group commit's floor).
Server CPU = user+system of the server process (all threads) from /proc/PID/stat,
divided by the messages of the scenario (of the phase, for "an-pub" and "an-pull": the
client marks the boundary on stderr). The table gives each median against nats-server's
for the same scenario.

For the multi-shard jetcore the round is classified by placement, read from /connz while
jetbench runs (a connection's shard is its cid modulo the shard count; a stream's shard is
`shard::placement::shard_for`, re-implemented below): "local" when the connections and the
stream of the scenario share a shard, "cross" otherwise. Medians are printed per server,
scenario and placement.

    cargo build --release --bin jetcore && cargo build --release -p jetbench --bin jetbench
    cargo build --release -p jetbench --example asyncnats_js --example js_ceiling  # --async-nats
    NATS_SERVER=/work/venv/bin/nats-server perf/shards.py --rounds 6 [--base other/jetcore]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
RATE = re.compile(r"([0-9,]+) msgs/s")
MASK64 = (1 << 64) - 1


def fnv1a_64(data: bytes) -> int:
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & MASK64
    return value


def jump_consistent_hash(key: int, buckets: int) -> int:
    bucket, following = -1, 0
    while following < buckets:
        bucket = following
        key = (key * 2862933555777941757 + 1) & MASK64
        following = int((bucket + 1) * ((1 << 31) / ((key >> 33) + 1)))
    return bucket


def stream_shard(name: str, shards: int) -> int:
    return jump_consistent_hash(fnv1a_64(name.encode()), shards)


def cpu_ticks(pid: int) -> int:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


class ConnWatch(threading.Thread):
    """Polls /connz until stopped; keeps the last figures of every connection seen."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.port, self.seen, self.stopping = port, {}, threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/connz?limit=1024", timeout=1) as answer:
                    for conn in json.load(answer).get("connections", []):
                        self.seen[conn["cid"]] = conn
            except (OSError, ValueError):
                pass
            self.stopping.wait(0.05)

    def stop(self) -> dict:
        self.stopping.set()
        self.join()
        return self.seen


def placement(scenario: str, seen: dict, stream: str, shards: int) -> str:
    if not seen:
        return "unknown"
    conns = list(seen.values())
    publisher = max(conns, key=lambda conn: conn.get("in_msgs", 0))
    receiver = max(conns, key=lambda conn: conn.get("out_msgs", 0))
    if scenario == "pubsub":
        same = publisher["cid"] % shards == receiver["cid"] % shards
    elif scenario == "req":
        same = len({conn["cid"] % shards for conn in conns}) == 1
    elif scenario == "js-pub":
        same = publisher["cid"] % shards == stream_shard(stream, shards)
    else:
        home = stream_shard(stream, shards)
        same = receiver["cid"] % shards == home and publisher["cid"] % shards == home
    return "local" if same else "cross"


def client_command(scenario: str, release: pathlib.Path, port: int, count: int, stream: str) -> list:
    url = f"nats://127.0.0.1:{port}"
    if scenario == "an-js":
        return [str(release / "examples" / "asyncnats_js"), url, str(count), "128", f"{stream}_0"]
    return [str(release / "jetbench"), scenario, "--url", url, "--size", "128", "--msgs", str(count),
            "--stream", stream, "--quiet"]


def client_rate(output: str) -> int:
    """A jetbench scenario's rate ("an-js" has three: `an_rows`)."""
    found = RATE.search(output)
    return int(found.group(1).replace(",", "")) if found else 0


def phase_rates(output: str) -> tuple:
    """asyncnats_js's (or js_ceiling's) publish and consume phase, msg/s."""
    figures = json.loads(output.strip().splitlines()[-1])
    return int(figures["publish_msgs_per_s"]), int(figures["consume_msgs_per_s"])


def an_rows(output: str) -> list:
    """The three "an-js" rows, (scenario, msg/s): both phases, then each."""
    try:
        publish, consume = phase_rates(output)
    except (ValueError, KeyError, IndexError):
        publish, consume = 0, 0
    # Both phases' messages over both phases' time: comparable with the CPU figure.
    both = int(1 / (1 / publish + 1 / consume)) if publish and consume else 0
    return [("an-js", both), ("an-pub", publish), ("an-pull", consume)]


def ceiling_rates(release: pathlib.Path, count: int, durable: bool = False) -> list:
    """async-nats's own ceiling for "an-js": the same phases against a stand-in server
    that stores nothing (tools/jetbench/examples/js_ceiling.rs); `durable`: one that makes
    each read's publishes durable with one write before it acks them (a group commit),
    into a file in the same temporary filesystem as the servers' stores."""
    with tempfile.TemporaryDirectory(prefix="shards-ceiling-") as directory:
        command = [str(release / "examples" / "js_ceiling"), str(count), "128"] + ([directory] if durable else [])
        out = subprocess.run(command, capture_output=True, text=True, timeout=300)
    return an_rows(out.stdout)


def run_an(command: list, pid: int) -> tuple:
    """Runs asyncnats_js, reading the server's CPU ticks at the start, at the phase
    boundary (the client's `published` line on stderr) and at the end."""
    before = cpu_ticks(pid)
    client = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    boundary = None
    for line in client.stderr:
        if line.startswith("published"):
            boundary = cpu_ticks(pid)
            break
    out, _ = client.communicate(timeout=300)
    after = cpu_ticks(pid)
    boundary = after if boundary is None else boundary
    return out, (before, boundary, after)


def run_round(server: str, binary: dict, release: pathlib.Path, messages: dict, port: int, stream: str):
    data = tempfile.mkdtemp(prefix="shards-")
    monitor = port + 1000
    if server == "nats":
        command = [binary["nats"], "-js", "-sd", data, "-p", str(port)]
    else:
        command = [binary["jetcore" if server == "jetcore-1" else server], "-sd", data, "-p", str(port),
                   "-m", str(monitor)]
        if server == "jetcore-1":
            command += ["--shards", "1"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = []
    try:
        time.sleep(1.0)
        for scenario, count in messages.items():
            multi = server not in ("nats", "jetcore-1")
            watch = ConnWatch(monitor) if multi else None
            if watch:
                watch.start()
            command = client_command(scenario, release, port, count, stream)
            if scenario == "an-js":
                out, (before, boundary, after) = run_an(command, process.pid)
                seen = watch.stop() if watch else {}
                where = placement(scenario, seen, f"{stream}_0", os.cpu_count() or 1) if multi else "-"
                ticks = (after - before, boundary - before, after - boundary)
                for (name, rate), phase_ticks in zip(an_rows(out), ticks):
                    results.append((name, where, rate, phase_ticks * 1e9 / os.sysconf("SC_CLK_TCK") / count))
                continue
            before = cpu_ticks(process.pid)
            out = subprocess.run(command, capture_output=True, text=True, timeout=300)
            ticks = cpu_ticks(process.pid) - before
            seen = watch.stop() if watch else {}
            try:
                rate = client_rate(out.stdout + out.stderr)
            except (ValueError, KeyError, IndexError):
                rate = 0
            # A pull scenario's messages were published then consumed: per message consumed.
            cpu_ns = ticks * 1e9 / os.sysconf("SC_CLK_TCK") / count
            where = placement(scenario, seen, f"{stream}_0", os.cpu_count() or 1) if multi else "-"
            results.append((scenario, where, rate, cpu_ns))
    finally:
        process.terminate()
        process.wait()
        shutil.rmtree(data, ignore_errors=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--nats-server", default=os.environ.get("NATS_SERVER", ".venv/bin/nats-server"))
    parser.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    parser.add_argument("--servers", default="nats,jetcore,jetcore-1")
    parser.add_argument("--async-nats", action="store_true",
                        help="also publish-then-consume through async-nats (build the asyncnats_js example)")
    parser.add_argument("--base", help="another jetcore binary, run as server 'base' (default configuration)")
    parser.add_argument("--other", action="append", default=[], metavar="NAME=PATH",
                        help="one more jetcore binary (or a script that execs one with other settings), "
                             "run as server NAME in the default configuration; repeatable")
    parser.add_argument("--scenarios", default="pubsub,js-pub,js-pull,req",
                        help="jetbench scenarios: pubsub, js-pub, js-pull, req (one request in flight)")
    arguments = parser.parse_args()
    release = pathlib.Path(arguments.target_dir) / "release"
    binary = {"nats": arguments.nats_server, "jetcore": str(release / "jetcore"), "base": arguments.base}
    others = dict(other.split("=", 1) for other in arguments.other)
    binary.update(others)
    servers = arguments.servers.split(",") + (["base"] if arguments.base else []) + list(others)
    counts = {"pubsub": 2_000_000, "js-pub": 200_000, "js-pull": 200_000, "req": 50_000}
    messages = {scenario: counts[scenario] for scenario in arguments.scenarios.split(",")}
    if arguments.async_nats:
        messages["an-js"] = 200_000
    shards = os.cpu_count() or 1
    # Alternate the stream's shard between rounds, so both placements of the stream occur.
    streams = {}
    for candidate in (f"shards{index}" for index in range(100)):
        streams.setdefault(stream_shard(f"{candidate}_0", shards), candidate)
    table: dict = {}
    for round_index in range(arguments.rounds):
        stream = streams[round_index % len(streams)]
        if "an-js" in messages:
            for name, durable in (("ceiling", False), ("ceiling-d", True)):
                for scenario, rate in ceiling_rates(release, messages["an-js"], durable):
                    print(f"round {round_index + 1} {name:9} {scenario:7} {'-':7} {rate:>10,} msg/s", flush=True)
                    table.setdefault((name, scenario, "-"), []).append((rate, 0))
        for server in servers:
            port = 5300 + round_index
            for scenario, where, rate, cpu_ns in run_round(server, binary, release, messages, port, stream):
                print(f"round {round_index + 1} {server:9} {scenario:7} {where:7} {rate:>10,} msg/s"
                      f"  server CPU {cpu_ns:,.0f} ns/msg", flush=True)
                table.setdefault((server, scenario, where), []).append((rate, cpu_ns))
    print("\n| server | scenario | placement | rounds | msg/s (median) | server CPU ns/msg (median) "
          "| rate ÷ nats-server's | CPU ÷ nats-server's |")
    print("|---|---|---|---|---|---|---|---|")
    medians = {key: (statistics.median(row[0] for row in rows), statistics.median(row[1] for row in rows))
               for key, rows in table.items()}
    for (server, scenario, where), (rate, cpu) in sorted(medians.items(), key=lambda item: (item[0][1], item[0][0], item[0][2])):
        nats = medians.get(("nats", scenario, "-"))
        rate_ratio = f"{rate / nats[0]:.2f}×" if nats and nats[0] else "-"
        cpu_ratio = f"{cpu / nats[1]:.2f}×" if nats and nats[1] and cpu else "-"
        print(f"| {server} | {scenario} | {where} | {len(table[(server, scenario, where)])} | {rate:,.0f} | {cpu:,.0f} "
              f"| {rate_ratio} | {cpu_ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
