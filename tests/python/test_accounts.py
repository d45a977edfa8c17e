"""nats-py 2.16 against jetcore with two accounts: each sees only its own messages (plain,
wildcard and queue subscriptions), JetStream and KV live in the account that enables them,
the other account is answered nats-server's `10039 JetStream not enabled for account`;
two accounts with JetStream each have a stream ORDERS and a bucket of their own."""
import asyncio
import json
import os
import tempfile

import nats
import pytest

from conftest import JetcoreServer, subscriptions_live

CONFIG = """
accounts {
  A { users: [{user: a, password: a}], jetstream: enabled }
  B { users: [{user: b, password: b}] }
}
"""


@pytest.fixture
def accounts_server():
    with tempfile.TemporaryDirectory(prefix="jetcore-py-accounts-") as temp:
        config = os.path.join(temp, "jetcore.conf")
        with open(config, "w") as file:
            file.write(CONFIG)
        server = JetcoreServer(os.path.join(temp, "store"), extra_args=["-c", config])
        try:
            yield server
        finally:
            server.kill()


def url(server, user):
    return server.url.replace("nats://", f"nats://{user}:{user}@")


async def test_two_accounts_see_nothing_of_each_other(accounts_server):
    a = await nats.connect(url(accounts_server, "a"))
    b = await nats.connect(url(accounts_server, "b"))
    seen = {"a": [], "b": []}

    def collector(name):
        async def collect(message):
            seen[name].append((message.subject, message.data.decode()))
        return collect

    await a.subscribe(">", cb=collector("a"))
    await b.subscribe(">", cb=collector("b"))
    await b.subscribe("jobs", queue="workers", cb=collector("b"))
    await a.flush()
    await b.flush()
    await a.publish("jobs", b"from a")
    await b.publish("jobs", b"from b")
    await a.flush()
    await b.flush()
    await asyncio.sleep(0.5)
    assert all(data == "from a" for _, data in seen["a"]), seen
    assert all(data == "from b" for _, data in seen["b"]), seen
    assert ("jobs", "from a") in seen["a"]
    assert seen["b"].count(("jobs", "from b")) == 2, "the `>` and the queue member"
    await a.close()
    await b.close()


async def test_jetstream_and_kv_live_in_their_account(accounts_server):
    a = await nats.connect(url(accounts_server, "a"))
    b = await nats.connect(url(accounts_server, "b"))
    kv = await a.jetstream().create_key_value(bucket="cfg")
    await kv.put("k", b"v")
    assert (await kv.get("k")).value == b"v"
    reply = await b.request("$JS.API.STREAM.INFO.KV_cfg", b"", timeout=2)
    error = json.loads(reply.data)["error"]
    assert (error["code"], error["err_code"], error["description"]) == (
        503, 10039, "JetStream not enabled for account")
    with pytest.raises(Exception):
        await b.jetstream().key_value("cfg")
    spy = await b.subscribe("$KV.>")
    await subscriptions_live(b)
    await kv.put("k", b"v2")
    with pytest.raises(nats.errors.TimeoutError):
        await spy.next_msg(timeout=0.5)
    await a.close()
    await b.close()


TWO_JETSTREAM_ACCOUNTS = """
accounts {
  A { users: [{user: a, password: a}], jetstream: enabled }
  B { users: [{user: b, password: b}], jetstream: enabled }
}
"""


async def test_two_accounts_each_have_their_own_stream_and_bucket():
    with tempfile.TemporaryDirectory(prefix="jetcore-py-accounts-") as temp:
        config = os.path.join(temp, "jetcore.conf")
        with open(config, "w") as file:
            file.write(TWO_JETSTREAM_ACCOUNTS)
        server = JetcoreServer(os.path.join(temp, "store"), extra_args=["-c", config])
        try:
            a = await nats.connect(url(server, "a"))
            b = await nats.connect(url(server, "b"))
            for client, subject, payload in [(a, "orders.eu", b"a's"), (b, "sales.eu", b"b's")]:
                js = client.jetstream()
                await js.add_stream(name="ORDERS", subjects=[subject.split(".")[0] + ".>"])
                ack = await js.publish(subject, payload)
                assert (ack.stream, ack.seq) == ("ORDERS", 1)
                kv = await js.create_key_value(bucket="cfg")
                await kv.put("k", payload)
            for client, subject, payload in [(a, "orders.>", b"a's"), (b, "sales.>", b"b's")]:
                js = client.jetstream()
                info = await js.stream_info("ORDERS")
                assert info.config.subjects == [subject] and info.state.messages == 1
                assert (await (await js.key_value("cfg")).get("k")).value == payload
                assert sorted(await js.streams_info(), key=lambda s: s.config.name)[0].config.name == "KV_cfg"
                assert len(await js.streams_info()) == 2
            await a.close()
            await b.close()
        finally:
            server.kill()
