#!/usr/bin/env python3
"""Hub client -> leaf subscriber rate: jetcore as the leaf against nats-server as the leaf,
both joined to one nats-server hub in the same run, alternated and repeated.

Usage: tools/leafbench.py JETCORE_BINARY [NATS_SERVER_BINARY] [MESSAGES] [ROUNDS]
The client is nats-py (one publisher on the hub, one subscriber on the leaf), so the
figures are bounded by the client too: read them as a ratio, not as a server's ceiling.
With JETBENCH=path/to/jetbench in the environment the client is jetbench instead
(`pubsub --url HUB --sub-url LEAF`: a Rust publisher and subscriber, not client-bound).
Prints msgs/s and the leaf server's CPU seconds (from /proc/PID/stat) per run."""
import asyncio, os, subprocess, sys, tempfile, time

import nats

JETCORE = sys.argv[1]
NATS_SERVER = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("NATS_SERVER", ".venv/bin/nats-server")
MESSAGES = int(sys.argv[3]) if len(sys.argv) > 3 else 200_000
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
PAYLOAD = b"x" * 128


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(args, directory, name):
    log = open(os.path.join(directory, f"{name}.log"), "w")
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)


async def wait_link(hub, leaf, subject):
    got = asyncio.Event()

    async def seen(message):
        got.set()

    sub = await leaf.subscribe(subject, cb=seen)
    await leaf.flush()
    for _ in range(300):
        await hub.publish(subject, b"probe")
        await hub.flush()
        try:
            await asyncio.wait_for(got.wait(), 0.1)
            break
        except asyncio.TimeoutError:
            pass
    await sub.unsubscribe()


JETBENCH = os.environ.get("JETBENCH")


def run_jetbench(hub_url, leaf_url, pid, subject):
    cpu_before = cpu_seconds(pid)
    output = subprocess.run([JETBENCH, "pubsub", "--url", hub_url, "--sub-url", leaf_url, "--subject", subject,
                             "--msgs", str(MESSAGES), "--size", str(len(PAYLOAD)), "--quiet"],
                            capture_output=True, text=True, check=True).stdout
    # jetbench's summary line: "  1,234,567 msgs/s (Received)  ..."
    rate = next(float(line.split()[0].replace(",", "")) for line in output.splitlines() if "msgs/s" in line)
    received = next((int(line.split("received")[1].split()[0]) for line in output.splitlines() if "received" in line), 0)
    return rate, cpu_seconds(pid) - cpu_before, received


async def run(hub_url, leaf_url, pid, subject):
    hub = await nats.connect(hub_url, pending_size=64 * 1024 * 1024)
    leaf = await nats.connect(leaf_url, pending_size=64 * 1024 * 1024)
    await wait_link(hub, leaf, subject + ".probe")
    count = 0
    done = asyncio.Event()

    async def received(message):
        nonlocal count
        count += 1
        if count == MESSAGES:
            done.set()

    await leaf.subscribe(subject, cb=received, pending_msgs_limit=MESSAGES * 2)
    await wait_link(hub, leaf, subject)
    count = 0
    cpu_before, start_time = cpu_seconds(pid), time.perf_counter()
    for _ in range(MESSAGES):
        await hub.publish(subject, PAYLOAD)
    await hub.flush()
    try:
        await asyncio.wait_for(done.wait(), 60)
    except asyncio.TimeoutError:
        pass
    elapsed = time.perf_counter() - start_time
    cpu = cpu_seconds(pid) - cpu_before
    await hub.close()
    await leaf.close()
    return count / elapsed, cpu, count


def main():
    directory = tempfile.mkdtemp(prefix="leafbench-")
    write = lambda name, text: open(os.path.join(directory, name), "w").write(text) and os.path.join(directory, name)
    hub_conf = write("hub.conf", "listen: 127.0.0.1:14900\nserver_name: hub\nleafnodes { listen: 127.0.0.1:17900 }\n")
    hub = start([NATS_SERVER, "-c", hub_conf], directory, "hub")
    time.sleep(0.5)
    remote = 'leafnodes { remotes: [ { url: "nats-leaf://127.0.0.1:17900" } ] }\n'
    jet_conf = write("jetcore.conf", "server_name: jetcore-leaf\njetstream { domain: edge }\n" + remote)
    nats_conf = write("nats.conf", "listen: 127.0.0.1:14902\nserver_name: nats-leaf\n" + remote)
    jet = start([JETCORE, "-c", jet_conf, "-p", "14901", "-a", "127.0.0.1", "-sd", os.path.join(directory, "js")],
                directory, "jetcore")
    spoke = start([NATS_SERVER, "-c", nats_conf], directory, "nats-leaf")
    time.sleep(1.5)
    try:
        results = {"jetcore": [], "nats-server": []}
        for round_index in range(ROUNDS):
            for name, url, process in (("jetcore", "nats://127.0.0.1:14901", jet),
                                       ("nats-server", "nats://127.0.0.1:14902", spoke)):
                measure = run_jetbench if JETBENCH else lambda *a: asyncio.run(run(*a))
                rate, cpu, count = measure("nats://127.0.0.1:14900", url, process.pid, f"bench.{name}.{round_index}")
                results[name].append(rate)
                print(f"round {round_index} {name:12} {rate:10.0f} msgs/s  leaf cpu {cpu:5.2f} s  received {count}")
        for name, rates in results.items():
            print(f"{name:12} median {sorted(rates)[len(rates) // 2]:10.0f} msgs/s")
        jet_median = sorted(results["jetcore"])[ROUNDS // 2]
        nats_median = sorted(results["nats-server"])[ROUNDS // 2]
        print(f"jetcore / nats-server as the leaf: {jet_median / nats_median:.2f}")
    finally:
        for process in (jet, spoke, hub):
            process.kill()


main()
