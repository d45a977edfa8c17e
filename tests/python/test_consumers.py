"""nats-py 2.16 consumers against jetcore on two shards: pull fetch with ack / nak /
term / in-progress, redelivery after ack_wait, push subscribe created before its SUB,
an ordered consumer, consumer info counters, a durable resuming after kill -9, and
interest and workqueue retention."""
import asyncio

import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig


async def fill(js, stream, count):
    await js.add_stream(name=stream, subjects=[f"{stream.lower()}.>"])
    for index in range(1, count + 1):
        await js.publish(f"{stream.lower()}.m", str(index).encode())


async def test_pull_fetch_ack_nak_term_and_in_progress(js):
    await fill(js, "PYPULL", 4)
    sub = await js.pull_subscribe("pypull.m", durable="d", config=ConsumerConfig(ack_wait=1.0))
    first = await sub.fetch(4, timeout=2)
    assert [m.data for m in first] == [b"1", b"2", b"3", b"4"]
    assert first[0].subject == "pypull.m"
    assert (first[3].metadata.sequence.stream, first[3].metadata.num_pending) == (4, 0)
    await first[0].ack_sync()
    await first[1].nak()
    await first[2].term()
    await first[3].in_progress()
    again = await sub.fetch(4, timeout=1)
    assert [(m.data, m.metadata.num_delivered) for m in again] == [(b"2", 2)]
    await again[0].ack_sync()
    info = await js.consumer_info("PYPULL", "d")
    assert (info.num_ack_pending, info.ack_floor.stream_seq, info.delivered.stream_seq) == (1, 3, 4)
    await asyncio.sleep(1.2)
    late = await sub.fetch(1, timeout=2)
    assert [(m.data, m.metadata.num_delivered) for m in late] == [(b"4", 2)]
    await late[0].ack_sync()
    with pytest.raises(nats.errors.TimeoutError):
        await sub.fetch(1, timeout=0.5)
    info = await js.consumer_info("PYPULL", "d")
    assert (info.num_ack_pending, info.num_pending, info.ack_floor.stream_seq) == (0, 0, 4)


async def test_push_subscribe_gets_what_was_published_before_the_sub(js):
    await fill(js, "PYPUSH", 3)
    received = asyncio.Queue()

    async def handler(message):
        await message.ack()
        await received.put(message.data)

    await js.subscribe("pypush.m", durable="p", cb=handler)
    got = [await asyncio.wait_for(received.get(), 2) for _ in range(3)]
    assert got == [b"1", b"2", b"3"]
    await js.publish("pypush.m", b"4")
    assert await asyncio.wait_for(received.get(), 2) == b"4"
    info = await js.consumer_info("PYPUSH", "p")
    assert info.push_bound


async def test_ordered_consumer_reads_in_order(js):
    await fill(js, "PYORD", 20)
    sub = await js.subscribe("pyord.m", ordered_consumer=True)
    got = [(await sub.next_msg(timeout=2)).data for _ in range(20)]
    assert got == [str(i).encode() for i in range(1, 21)]


async def test_durable_resumes_after_kill_9(server):
    nc = await nats.connect(server.url, allow_reconnect=False)
    js = nc.jetstream(timeout=5)
    await fill(js, "PYRST", 6)
    sub = await js.pull_subscribe("pyrst.m", durable="d", config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT))
    for message in await sub.fetch(3, timeout=2):
        if message.data != b"2":
            await message.ack_sync()
    await nc.close()
    server.restart()
    nc = await nats.connect(server.url, allow_reconnect=False)
    js = nc.jetstream(timeout=5)
    info = await js.consumer_info("PYRST", "d")
    assert (info.delivered.stream_seq, info.ack_floor.stream_seq, info.num_ack_pending) == (3, 1, 1)
    sub = await js.pull_subscribe("pyrst.m", durable="d")
    rest = await sub.fetch(3, timeout=2)
    assert [m.data for m in rest] == [b"4", b"5", b"6"]
    await nc.close()


async def stream_state(js, name):
    state = (await js.stream_info(name)).state
    return (state.messages, state.first_seq, state.last_seq)


async def test_interest_and_workqueue_retention(js):
    """The states nats-server 2.15 reports for the same steps."""
    from nats.js.api import RetentionPolicy
    await js.add_stream(name="PYINT", subjects=["pyint.>"], retention=RetentionPolicy.INTEREST)
    assert (await js.publish("pyint.a", b"nobody")).seq == 1
    assert await stream_state(js, "PYINT") == (0, 2, 1)
    await js.add_consumer("PYINT", ConsumerConfig(durable_name="all", ack_policy=AckPolicy.EXPLICIT))
    await js.add_consumer("PYINT", ConsumerConfig(durable_name="b", ack_policy=AckPolicy.EXPLICIT,
                                                  filter_subject="pyint.b"))
    for subject in ["pyint.a", "pyint.b"]:
        await js.publish(subject, b"x")
    every = await js.pull_subscribe_bind("all", "PYINT")
    for message in await every.fetch(2, timeout=2):
        await message.ack_sync()
    assert await stream_state(js, "PYINT") == (1, 3, 3), "pyint.b still waits for b"
    only_b = await js.pull_subscribe_bind("b", "PYINT")
    [message] = await only_b.fetch(1, timeout=2)
    await message.ack_sync()
    assert await stream_state(js, "PYINT") == (0, 4, 3)

    await js.add_stream(name="PYWQ", subjects=["pywq.>"], retention=RetentionPolicy.WORK_QUEUE)
    for index in range(3):
        await js.publish("pywq.job", str(index).encode())
    worker = await js.pull_subscribe("pywq.job", durable="w", stream="PYWQ")
    jobs = await worker.fetch(3, timeout=2)
    await jobs[0].ack_sync()
    await jobs[1].term()
    await asyncio.sleep(0.2)
    assert await stream_state(js, "PYWQ") == (1, 3, 3), "acked and terminated work is gone"
