#!/usr/bin/env python3
"""Mirror lag across a leaf link: a 3-node nats-server hub cluster keeps an R3 mirror of a
jetcore stream (jetcore is a leaf in domain `edge`), while jetbench publishes into jetcore
at a fixed rate. Samples both streams' last sequence every 100 ms and reports how far
behind the origin the mirror is, in seconds: at each sample, the time since the origin
first held the mirror's last message.

Usage: tools/mirrorlag.py JETCORE JETBENCH [NATS_SERVER] [RATE] [SIZE] [SECONDS]
(defaults: .venv/bin/nats-server or $NATS_SERVER, 50000 msgs/s, 1024 B, 20 s).
Both servers run in their default configuration; jetcore acks each publish after fdatasync."""
import asyncio, json, os, socket, subprocess, sys, tempfile, time

import nats

JETCORE, JETBENCH = sys.argv[1], sys.argv[2]
NATS_SERVER = sys.argv[3] if len(sys.argv) > 3 else os.environ.get("NATS_SERVER", ".venv/bin/nats-server")
RATE = int(sys.argv[4]) if len(sys.argv) > 4 else 50_000
SIZE = int(sys.argv[5]) if len(sys.argv) > 5 else 1024
SECONDS = int(sys.argv[6]) if len(sys.argv) > 6 else 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args, directory, name):
    log = open(os.path.join(directory, f"{name}.log"), "w")
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)


def start_hub(directory):
    routes = [free_port() for _ in range(3)]
    nodes = []
    for index in range(3):
        client, leaf = free_port(), free_port()
        route_list = ", ".join(f'"nats-route://127.0.0.1:{port}"' for port in routes)
        config = os.path.join(directory, f"hub-{index}.conf")
        with open(config, "w") as out:
            out.write(
                f"server_name: hub-{index}\nlisten: 127.0.0.1:{client}\nleafnodes {{ listen: 127.0.0.1:{leaf} }}\n"
                f'jetstream {{ store_dir: "{directory}/hub-{index}", domain: hub }}\n'
                f'cluster {{ name: hub, listen: "127.0.0.1:{routes[index]}", routes: [{route_list}] }}\n'
            )
        nodes.append((start([NATS_SERVER, "-c", config], directory, f"hub-{index}"), client, leaf))
    return nodes


async def connect(url):
    for _ in range(100):
        try:
            with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=1):
                break
        except OSError:
            await asyncio.sleep(0.1)
    return await nats.connect(url)


async def request(client, subject, body=b""):
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    reply = await asyncio.wait_for(client.request(subject, payload, timeout=5), 6)
    return json.loads(reply.data)


async def main():
    directory = tempfile.mkdtemp(prefix="mirrorlag-")
    processes = []
    try:
        hub_nodes = start_hub(directory)
        processes += [process for process, _, _ in hub_nodes]
        leaf_urls = ", ".join(f'"nats-leaf://127.0.0.1:{leaf}"' for _, _, leaf in hub_nodes)
        spoke_port = free_port()
        config = os.path.join(directory, "edge.conf")
        with open(config, "w") as out:
            out.write(f"server_name: edge-1\njetstream {{ domain: edge }}\nleafnodes {{ remotes: [ {{ urls: [{leaf_urls}] }} ] }}\n")
        spoke = start([JETCORE, "-a", "127.0.0.1", "-p", str(spoke_port), "-sd", f"{directory}/edge", "-c", config],
                      directory, "jetcore")
        processes.append(spoke)
        hub = await connect(f"nats://127.0.0.1:{hub_nodes[0][1]}")
        edge = await connect(f"nats://127.0.0.1:{spoke_port}")
        for attempt in range(200):  # the cluster has a JetStream leader, and the leaf link is up
            try:
                info = await request(hub, "$JS.API.INFO")
                through = await request(hub, "$JS.edge.API.INFO")
                if "error" not in info and "error" not in through:
                    break
            except Exception as error:
                info = through = {"error": str(error)}
            if attempt % 10 == 9:
                print("waiting:", info.get("error"), "/", through.get("error"), flush=True)
            await asyncio.sleep(0.2)
        else:
            raise SystemExit(f"the hub cluster or the leaf link did not come up: {info} / {through}")

        bench = subprocess.Popen([JETBENCH, "js-pub", "--url", f"nats://127.0.0.1:{spoke_port}", "--size", str(SIZE),
                                  "--rate", str(RATE), "--duration", f"{SECONDS}s", "--quiet", "--keep-streams"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        while "error" in await request(edge, "$JS.API.STREAM.INFO.JETBENCH_0"):
            if bench.poll() is not None:
                raise SystemExit(f"jetbench ended before its stream existed: {bench.stdout.read()}")
            await asyncio.sleep(0.05)
        mirror = {"name": "M", "num_replicas": 3,
                  "mirror": {"name": "JETBENCH_0", "external": {"api": "$JS.edge.API"}}}
        created = await request(hub, "$JS.API.STREAM.CREATE.M", mirror)
        if "error" in created:
            raise SystemExit(f"mirror create: {created['error']}")
        start_time = time.monotonic()
        origin_reached = []  # (time, origin last_seq), increasing
        lags = []
        while True:
            origin = (await request(edge, "$JS.API.STREAM.INFO.JETBENCH_0"))["state"]["last_seq"]
            now = time.monotonic() - start_time
            origin_reached.append((now, origin))
            copied = (await request(hub, "$JS.API.STREAM.INFO.M"))["state"]["last_seq"]
            now = time.monotonic() - start_time
            held_since = next((t for t, seq in origin_reached if seq >= copied), now)
            lags.append((now, max(0.0, now - held_since), origin, copied))
            if bench.poll() is not None and copied >= origin:
                break
            if now > SECONDS + 60:
                print("the mirror did not catch up within 60 s of the end")
                break
            await asyncio.sleep(0.1)
        print(bench.stdout.read().strip().splitlines()[-3:] if bench.stdout else "")
        during = sorted(lag for _, lag, _, _ in lags)
        worst = max(lags, key=lambda sample: sample[1])
        print(f"rate {RATE}/s x {SIZE} B for {SECONDS} s: {len(lags)} samples; mirror lag p50 "
              f"{during[len(during) // 2]:.2f} s, p99 {during[int(len(during) * 0.99)]:.2f} s, max {worst[1]:.2f} s "
              f"(at {worst[0]:.1f} s: origin {worst[2]}, mirror {worst[3]}); final origin {lags[-1][2]}, mirror {lags[-1][3]}")
        cpu = [(p, open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()) for p in processes]
        ticks = os.sysconf("SC_CLK_TCK")
        print("CPU s: jetcore", (int(cpu[-1][1][11]) + int(cpu[-1][1][12])) / ticks,
              "hub nodes", [(int(f[11]) + int(f[12])) / ticks for _, f in cpu[:-1]])
    finally:
        for process in processes:
            process.kill()


asyncio.run(main())
