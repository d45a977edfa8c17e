"""nats-py 2.16 key-value buckets against jetcore on two shards: create and bind,
put / get / update / create conflicts, delete and purge markers, history, watch (all keys,
one key, updates after the initial values), keys, per-message TTL, purge_deletes, and a
bucket surviving kill -9."""
import asyncio

import nats
import pytest
from nats.js.errors import (BadRequestError, KeyNotFoundError, KeyWrongLastSequenceError,
                            ServerError)
from nats.js.kv import KV_DEL, KV_PURGE


async def connect(server):
    nc = await nats.connect(server.url, allow_reconnect=False)
    return nc, nc.jetstream(timeout=5)


async def drain_initial(watcher):
    """Entries up to the watcher's `None` marker (end of the initial values)."""
    entries = []
    while True:
        entry = await watcher.updates(timeout=5)
        if entry is None:
            return entries
        entries.append(entry)


async def test_put_get_update_create_delete_purge_history(js):
    kv = await js.create_key_value(bucket="PYKV", history=5)
    info = await js.stream_info("KV_PYKV")
    assert info.config.subjects == ["$KV.PYKV.>"]
    assert (info.config.max_msgs_per_subject, info.config.discard) == (5, "new")
    assert info.config.allow_rollup_hdrs and info.config.deny_delete and info.config.allow_msg_ttl
    bound = await js.key_value("PYKV")

    assert await kv.put("color", b"red") == 1
    entry = await bound.get("color")
    assert (entry.key, entry.value, entry.revision) == ("color", b"red", 1)
    assert await kv.update("color", b"green", last=1) == 2
    with pytest.raises(KeyWrongLastSequenceError):
        await kv.update("color", b"blue", last=1)
    with pytest.raises(KeyWrongLastSequenceError):
        await kv.create("color", b"again")
    assert await kv.create("size", b"L") == 3
    assert (await kv.get("color", revision=1)).value == b"red"
    with pytest.raises(KeyNotFoundError):
        await kv.get("missing")

    await kv.delete("color")
    with pytest.raises(KeyNotFoundError):
        await kv.get("color")
    assert await kv.create("color", b"teal") == 5  # a deleted key can be created again
    history = await kv.history("color")
    assert [(e.revision, e.operation, e.value) for e in history] == [
        (1, None, b"red"), (2, None, b"green"), (4, KV_DEL, b""), (5, None, b"teal")]

    await kv.purge("color")  # KV-Operation: PURGE with Nats-Rollup: sub
    history = await kv.history("color")
    assert [(e.revision, e.operation) for e in history] == [(6, KV_PURGE)]
    with pytest.raises(KeyNotFoundError):
        await kv.get("color")
    assert (await kv.get("size")).value == b"L"
    state = (await js.stream_info("KV_PYKV")).state
    assert (state.messages, state.last_seq) == (2, 6)

    # purge_deletes removes the markers (a filtered stream purge per key).
    await kv.delete("size")
    await kv.purge_deletes(olderthan=0)
    state = (await js.stream_info("KV_PYKV")).state
    assert state.messages == 0


async def test_history_limit_and_keys(js):
    kv = await js.create_key_value(bucket="PYHIST", history=2)
    for index in range(6):
        await kv.put("n", str(index).encode())
    assert [e.value for e in await kv.history("n")] == [b"4", b"5"]
    await kv.put("a.b", b"x")
    await kv.put("gone", b"x")
    await kv.delete("gone")
    assert sorted(await kv.keys()) == ["a.b", "n"]


async def test_watch_all_one_key_and_updates(js):
    kv = await js.create_key_value(bucket="PYWATCH")
    await kv.put("a", b"a1")
    await kv.put("b", b"b1")
    await kv.put("a", b"a2")

    everything = await kv.watchall()
    initial = await drain_initial(everything)
    assert [(e.key, e.value) for e in initial] == [("b", b"b1"), ("a", b"a2")]

    only_a = await kv.watch("a")
    assert [(e.key, e.value) for e in await drain_initial(only_a)] == [("a", b"a2")]

    empty = await kv.watch("later.*")
    assert await drain_initial(empty) == []  # nothing yet: just the marker

    await kv.put("b", b"b2")
    await kv.put("a", b"a3")
    await kv.put("later.x", b"new")
    await kv.delete("a")

    updates = [await everything.updates(timeout=5) for _ in range(4)]
    assert [(e.key, e.value, e.operation) for e in updates] == [
        ("b", b"b2", None), ("a", b"a3", None), ("later.x", b"new", None), ("a", b"", KV_DEL)]
    a_updates = [await only_a.updates(timeout=5) for _ in range(2)]
    assert [(e.revision, e.operation) for e in a_updates] == [(5, None), (7, KV_DEL)]
    late = await empty.updates(timeout=5)
    assert (late.key, late.value, late.revision) == ("later.x", b"new", 6)
    for watcher in (everything, only_a, empty):
        await watcher.stop()


async def test_per_message_ttl_expires_a_key(js):
    kv = await js.create_key_value(bucket="PYTTL")
    await kv.create("session", b"token", msg_ttl=1)
    await kv.put("forever", b"stays")
    assert (await kv.get("session")).value == b"token"
    await asyncio.sleep(2.5)
    with pytest.raises(KeyNotFoundError):
        await kv.get("session")
    assert (await kv.get("forever")).value == b"stays"
    state = (await js.stream_info("KV_PYTTL")).state
    assert state.messages == 1


async def test_ttl_and_rollup_refused_where_not_allowed(nc, js):
    await js.add_stream(name="PLAIN", subjects=["plain.>"])
    with pytest.raises(BadRequestError) as refused:
        await js.publish("plain.a", b"x", headers={"Nats-TTL": "5s"})
    assert (refused.value.err_code, refused.value.description) == (10166, "per-message TTL is disabled")
    with pytest.raises(ServerError) as refused:
        await js.publish("plain.a", b"x", headers={"Nats-Rollup": "sub"})
    assert (refused.value.err_code, refused.value.description) == (10111, "rollup not permitted")
    await js.add_stream(name="TTLS", subjects=["ttls.>"], allow_msg_ttl=True)
    with pytest.raises(BadRequestError) as refused:
        await js.publish("ttls.a", b"x", headers={"Nats-TTL": "500ms"})
    assert refused.value.err_code == 10165
    assert (await js.stream_info("PLAIN")).state.messages == 0


async def test_bucket_survives_kill_9(server):
    nc, js = await connect(server)
    kv = await js.create_key_value(bucket="PYKEEP", history=3)
    for index in range(5):
        await kv.put("counter", str(index).encode())
    await kv.put("name", b"jetcore")
    await kv.delete("name")
    await kv.put("temp", b"1")
    await kv.purge("temp")
    await kv.create("short", b"lived", msg_ttl=2)
    await nc.close()

    server.restart()
    nc, js = await connect(server)
    kv = await js.key_value("PYKEEP")
    assert [(e.revision, e.value) for e in await kv.history("counter")] == [
        (3, b"2"), (4, b"3"), (5, b"4")]
    with pytest.raises(KeyNotFoundError):
        await kv.get("name")
    assert [(e.revision, e.operation) for e in await kv.history("temp")] == [(9, KV_PURGE)]
    assert (await kv.get("short")).value == b"lived"
    assert await kv.put("counter", b"5") == 11
    await asyncio.sleep(2.5)  # the TTL deadline survived the restart
    with pytest.raises(KeyNotFoundError):
        await kv.get("short")
    await nc.close()
