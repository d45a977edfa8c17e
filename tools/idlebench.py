#!/usr/bin/env python3
"""Idle cost of nats-server and jetcore, measured in one run (issue 28).

For each server and each setup it starts the server fresh on an empty store, optionally
creates `--streams` streams and `--consumers` durable pull consumers spread over them,
disconnects every client, lets the server settle, and reads over `--seconds`:
  - server CPU from /proc/PID/stat (utime + stime, 100 ticks per CPU-second);
  - wake-ups: voluntary + involuntary context switches of every thread, from
    /proc/PID/task/*/status, per second, in all and for the busiest thread.
Then (empty setup) it measures the first request after idle: a JetStream publish (acked
after its write) and a PING/PONG round trip, each sent after `--idle` seconds of silence,
against the same sent right after the previous answer (the busy case), `--samples` times,
with one client (nats-py; its own latency is in both numbers).

Rounds alternate the servers (nats, jetcore, nats, ...) so drift of the machine falls
on both. Usage (build jetcore first: cargo build --release --bin jetcore):

  /work/venv/bin/python tools/idlebench.py --nats-server /work/venv/bin/nats-server
  # the first durable publish after idle beside nats-server's sync_interval: always
  /work/venv/bin/python tools/idlebench.py --latency-only --servers nats-sync,jetcore --rounds 3
"""

import argparse
import asyncio
import glob
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

import nats


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def switches(pid):
    """Context switches per thread: {tid: (name, count)}."""
    counts = {}
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(f"{task}/comm") as comm:
                name = comm.read().strip()
            total = 0
            with open(f"{task}/status") as status:
                for line in status:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
            counts[os.path.basename(task)] = (name, total)
        except OSError:
            continue  # a thread that ended meanwhile
    return counts


def start(server, binary, port, store):
    command = [binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", store]
    if server == "nats-sync":
        # nats-server 2.15 has no command-line flag for sync_interval: a conf file.
        config = os.path.join(store, "server.conf")
        with open(config, "w") as conf:
            conf.write(f'listen: "127.0.0.1:{port}"\njetstream {{\n  store_dir: "{store}/data"\n'
                       "  sync_interval: always\n}\n")
        command = [binary, "-c", config]
    if server == "jetcore1":
        command += ["--shards", "1"]  # no cross-shard hop: the connection's shard owns the stream
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
                if sock.recv(4).startswith(b"INFO"):
                    return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"{server} did not start")


async def populate(url, streams, consumers):
    client = await nats.connect(url)
    js = client.jetstream()
    for index in range(streams):
        await js.add_stream(name=f"IDLE{index}", subjects=[f"idle.{index}.>"])
    for index in range(consumers):
        stream = f"IDLE{index % max(streams, 1)}"
        await js.add_consumer(stream, durable_name=f"D{index}", ack_policy="explicit")
    await client.drain()


async def first_publish(url, idle_seconds, samples):
    """{what: (busy latencies, after-idle latencies)} in µs, for a JetStream publish (to
    disk) and a PING/PONG round trip (`flush`, the server's wake-up alone)."""
    client = await nats.connect(url)
    js = client.jetstream()
    await js.add_stream(name="LATENCY", subjects=["latency.>"])
    operations = {
        "js publish": lambda: js.publish("latency.x", b"x" * 128),
        "ping/pong": client.flush,
    }
    for _ in range(200):  # warm up both sides
        await js.publish("latency.x", b"x" * 128)
    results = {}
    for what, operation in operations.items():
        busy, idle = [], []
        for _ in range(samples):
            for _ in range(20):
                started = time.perf_counter()
                await operation()
                busy.append((time.perf_counter() - started) * 1e6)
            await asyncio.sleep(idle_seconds)
            started = time.perf_counter()
            await operation()
            idle.append((time.perf_counter() - started) * 1e6)
        results[what] = (busy, idle)
    await client.drain()
    return results


def measure_idle(pid, seconds):
    ticks_before, switches_before = cpu_ticks(pid), switches(pid)
    time.sleep(seconds)
    ticks_after, switches_after = cpu_ticks(pid), switches(pid)
    per_thread = {}
    for tid, (name, count) in switches_after.items():
        before = switches_before.get(tid, (name, 0))[1]
        per_thread[f"{name}/{tid}"] = (count - before) / seconds
    return (ticks_after - ticks_before), per_thread


def run_one(server, binary, setup, args):
    store = tempfile.mkdtemp(prefix=f"idlebench-{server}-")
    port = free_port()
    process = start(server, binary, port, store)
    url = f"nats://127.0.0.1:{port}"
    try:
        streams, consumers = setup
        if streams or consumers:
            asyncio.run(populate(url, streams, consumers))
        time.sleep(args.settle)
        ticks, per_thread = measure_idle(process.pid, args.seconds)
        latency = None
        if args.samples:
            latency = asyncio.run(first_publish(url, args.idle, args.samples))
        return ticks, per_thread, latency
    finally:
        process.terminate()
        process.wait()
        shutil.rmtree(store, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nats-server", default=os.environ.get("NATS_SERVER", ".venv/bin/nats-server"))
    parser.add_argument("--jetcore", default="target/release/jetcore")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--settle", type=float, default=3, help="seconds after setup before measuring")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--consumers", type=int, default=1000)
    parser.add_argument("--idle", type=float, default=1.0, help="silence before the after-idle publish")
    parser.add_argument("--samples", type=int, default=20, help="after-idle publishes (0: skip latency)")
    parser.add_argument("--servers", default="nats,jetcore",
                        help="comma-separated: nats, nats-sync (sync_interval: always), jetcore, "
                             "jetcore1 (--shards 1)")
    parser.add_argument("--latency-only", action="store_true",
                        help="only the after-idle latency: no populated setup, no idle CPU window")
    args = parser.parse_args()
    binaries = {"nats": args.nats_server, "nats-sync": args.nats_server, "jetcore": args.jetcore, "jetcore1": args.jetcore}
    servers = {name: binaries[name] for name in args.servers.split(",")}
    setups = {"empty": (0, 0), f"{args.streams} streams, {args.consumers} durables": (args.streams, args.consumers)}
    if args.latency_only:
        setups = {"empty": (0, 0)}
        args.seconds = 0.1
    print(f"idle {args.seconds:.0f} s per measurement, CPU ticks are 1/100 s of one CPU")
    for round_index in range(args.rounds):
        for setup_name, setup in setups.items():
            for server, binary in servers.items():
                samples = args.samples if setup == (0, 0) else 0
                ticks, per_thread, latency = run_one(server, binary, setup, argparse.Namespace(**{**vars(args), "samples": samples}))
                wakes = sum(per_thread.values())
                busiest = max(per_thread.items(), key=lambda item: item[1])
                cpu_percent = ticks / args.seconds  # ticks/s = % of one CPU
                line = (f"round {round_index + 1} {server:9} {setup_name:28} CPU {ticks:4d} ticks "
                        f"({cpu_percent:.2f} % of a CPU), wake-ups {wakes:7.1f}/s "
                        f"(busiest thread {busiest[0]} {busiest[1]:.1f}/s)")
                print(line, flush=True)
                for what, (busy, idle) in (latency or {}).items():
                    busy_p50, idle_p50 = statistics.median(busy), statistics.median(idle)
                    print(f"round {round_index + 1} {server:9} {what} µs: busy p50 {busy_p50:.0f} "
                          f"p90 {statistics.quantiles(busy, n=10)[-1]:.0f}; after {args.idle:.0f} s idle p50 "
                          f"{idle_p50:.0f} p90 {statistics.quantiles(idle, n=10)[-1]:.0f}; "
                          f"ratio {idle_p50 / busy_p50:.2f}", flush=True)


if __name__ == "__main__":
    main()
