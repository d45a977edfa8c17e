"""A nats-py session as applications run one: streams, publishes, pull and push consumers,
KV, object store, counters, schedules and a snapshot, one step at a time so that the
requests come in the same order on every run.

Usage: python tests/sessions/nats_py.py nats://127.0.0.1:PORT
tests/client_sessions_vs_nats.rs runs it through a recording proxy, once against
nats-server and once against jetcore, and compares the replies. Nothing here checks a
reply: the comparison does. A step that raises ends the session with its error printed.
"""
import asyncio, json, sys

import nats
from nats.js.api import ConsumerConfig, AckPolicy, StreamConfig, DeliverPolicy


async def api(nc, subject, body):
    """A raw $JS.API request, for what nats-py has no call for (counters, schedules)."""
    return await nc.request(subject, json.dumps(body).encode(), timeout=5)


async def watched(listing):
    """kv.keys() or kv.history(), which nats-py can end empty against any server.

    Its watcher asks for the consumer's info while the server is already delivering. When
    the info says nothing is pending and the reader has not yet counted a delivery, nats-py
    ends the listing before its first entry and raises NoKeysError (seen against nats-server
    2.15 on a 2-CPU machine). The requests and deliveries are the same either way, and those
    are what the comparison checks.
    """
    try:
        await listing
    except nats.js.errors.NoKeysError:
        pass


async def main(url):
    nc = await nats.connect(url)
    js = nc.jetstream()

    await js.account_info()
    await js.add_stream(StreamConfig(name="ORDERS", subjects=["orders.>"], max_msgs_per_subject=10))
    await js.stream_info("ORDERS")
    for i in range(6):
        await js.publish(f"orders.{i % 3}", f"order {i}".encode())
    await js.publish("orders.1", b"once", headers={"Nats-Msg-Id": "m-1"})
    await js.publish("orders.1", b"once", headers={"Nats-Msg-Id": "m-1"})
    await js.publish("orders.2", b"expected", headers={"Nats-Expected-Last-Subject-Sequence": "6"})
    try:
        await js.publish("orders.2", b"wrong", headers={"Nats-Expected-Last-Sequence": "1"})
    except nats.js.errors.APIError:
        pass
    await js.update_stream(StreamConfig(name="ORDERS", subjects=["orders.>"], max_msgs_per_subject=10,
                                        description="orders of the day"))
    await js.get_msg("ORDERS", seq=2)
    await js.get_last_msg("ORDERS", "orders.1")
    await js.delete_msg("ORDERS", 3)

    # A durable pull consumer: fetch, ack with a reply, consumer info.
    await js.add_consumer("ORDERS", ConsumerConfig(durable_name="WORKER", ack_policy=AckPolicy.EXPLICIT,
                                                   filter_subject="orders.>"))
    puller = await js.pull_subscribe_bind("WORKER", "ORDERS")
    for message in await puller.fetch(3, timeout=2):
        await message.ack_sync()
    for message in await puller.fetch(2, timeout=2):
        await message.nak()
    await js.consumer_info("ORDERS", "WORKER")
    await puller.unsubscribe()
    # Pull requests that find nothing: no-wait (404), then a wait that expires (408). Raw
    # requests: nats-py's fetch stops listening as the 408 is due, a race to record.
    await js.add_consumer("ORDERS", ConsumerConfig(durable_name="IDLE", filter_subject="orders.9",
                                                   ack_policy=AckPolicy.EXPLICIT))
    await api(nc, "$JS.API.CONSUMER.MSG.NEXT.ORDERS.IDLE", {"batch": 1, "no_wait": True})
    await api(nc, "$JS.API.CONSUMER.MSG.NEXT.ORDERS.IDLE", {"batch": 1, "expires": 200_000_000})

    # A push consumer with a durable name, bound to an inbox.
    pushed = await js.subscribe("orders.0", durable="AUDIT", manual_ack=True)
    for _ in range(2):
        message = await pushed.next_msg(timeout=2)
        await message.ack_sync()
    await pushed.consumer_info()
    await pushed.unsubscribe()
    await js.delete_consumer("ORDERS", "WORKER")

    # KV.
    kv = await js.create_key_value(bucket="PROFILE", history=3)
    await kv.put("alice", b"1")
    await kv.put("alice", b"2")
    revision = await kv.put("bob", b"1")
    await kv.update("bob", b"2", last=revision)
    try:
        await kv.update("bob", b"3", last=revision)
    except nats.js.errors.KeyWrongLastSequenceError:
        pass
    await kv.get("alice")
    await kv.create("carol", b"x")
    await kv.delete("carol")
    await watched(kv.history("alice"))
    await watched(kv.keys())
    await kv.purge("bob")
    await kv.status()

    # Object store: a chunked put, info, get, list, delete.
    store = await js.create_object_store("FILES")
    await store.put("report.csv", bytes(range(256)) * 1200)
    await store.get_info("report.csv")
    await store.get("report.csv")
    await store.list()
    await store.delete("report.csv")
    await store.status()

    # Counters and schedules, which nats-py has no calls for (raw API requests).
    await api(nc, "$JS.API.STREAM.CREATE.HITS",
              {"name": "HITS", "subjects": ["hits.>"], "allow_msg_counter": True, "allow_direct": True})
    for increment in ("1", "41", "-2"):
        await js.publish("hits.page", b"", headers={"Nats-Incr": increment})
    await api(nc, "$JS.API.STREAM.MSG.GET.HITS", {"last_by_subj": "hits.page"})
    await api(nc, "$JS.API.STREAM.CREATE.LATER",
              {"name": "LATER", "subjects": ["later.>"], "allow_msg_schedules": True})
    await js.publish("later.every", b"tick", headers={"Nats-Schedule": "@every 1h",
                                                     "Nats-Schedule-Target": "later.ticks"})
    await js.stream_info("LATER")

    # A snapshot, chunks acked as they come; the chunks' bytes depend on the compressor.
    done = asyncio.get_running_loop().create_future()

    async def chunk(message):
        if not message.data and message.headers is None:
            if not done.done():
                done.set_result(True)
        elif message.reply:
            await nc.publish(message.reply, b"")
        if message.headers and not message.data and not done.done():
            done.set_result(True)

    await nc.subscribe("snapshot.orders", cb=chunk)
    await api(nc, "$JS.API.STREAM.SNAPSHOT.ORDERS", {"deliver_subject": "snapshot.orders", "chunk_size": 1024})
    await asyncio.wait_for(done, 10)

    await js.streams_info()
    await js.delete_stream("LATER")
    await js.delete_stream("HITS")
    await js.delete_stream("ORDERS")
    await nc.drain()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
