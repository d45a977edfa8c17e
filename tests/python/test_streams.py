"""nats-py 2.16 against jetcore: stream management, publish acks, dedupe, message get,
purge, delete, and STREAM.LIST paging."""
import json

import pytest
from nats.js.api import DiscardPolicy, StorageType, StreamConfig
from nats.js.errors import BadRequestError, NoStreamResponseError, NotFoundError, ServiceUnavailableError


async def test_add_stream_echoes_defaults_and_info_matches(js):
    created = await js.add_stream(name="ORDERS", subjects=["orders.*"])
    config = created.config
    assert (config.name, config.subjects) == ("ORDERS", ["orders.*"])
    assert (config.max_msgs, config.max_bytes, config.max_msgs_per_subject) == (-1, -1, -1)
    assert config.storage == StorageType.FILE
    assert config.discard == DiscardPolicy.OLD
    assert config.num_replicas == 1
    assert config.duplicate_window == 120.0
    assert (created.state.messages, created.state.first_seq, created.state.last_seq) == (0, 0, 0)

    info = await js.stream_info("ORDERS")
    assert info.config == config
    # Same config again: idempotent. A different one: 10058.
    again = await js.add_stream(name="ORDERS", subjects=["orders.*"])
    assert again.config == config
    with pytest.raises(BadRequestError) as refused:
        await js.add_stream(name="ORDERS", subjects=["orders.*"], max_msgs=5)
    assert refused.value.err_code == 10058
    assert refused.value.description == "stream name already in use with a different configuration"
    with pytest.raises(BadRequestError) as overlap:
        await js.add_stream(name="OTHER", subjects=["orders.eu"])
    assert overlap.value.err_code == 10065

    updated = await js.update_stream(StreamConfig(name="ORDERS", subjects=["orders.*"], max_msgs=50))
    assert updated.config.max_msgs == 50
    assert (await js.stream_info("ORDERS")).config.max_msgs == 50


async def test_publish_acks_and_dedupe(js):
    await js.add_stream(name="EVENTS", subjects=["events.>"])
    for seq in range(1, 21):
        ack = await js.publish(f"events.{seq % 4}", f"event {seq}".encode())
        assert (ack.stream, ack.seq, ack.duplicate) == ("EVENTS", seq, None)
    first = await js.publish("events.x", b"once", headers={"Nats-Msg-Id": "abc"})
    assert (first.seq, first.duplicate) == (21, None)
    again = await js.publish("events.x", b"once", headers={"Nats-Msg-Id": "abc"})
    assert (again.stream, again.seq, again.duplicate) == ("EVENTS", 21, True)
    info = await js.stream_info("EVENTS")
    assert (info.state.messages, info.state.last_seq) == (21, 21)


async def test_expected_headers_and_missing_stream(js):
    await js.add_stream(name="EXP", subjects=["exp.*"])
    await js.publish("exp.a", b"1", headers={"Nats-Msg-Id": "m1"})
    with pytest.raises(BadRequestError) as wrong_seq:
        await js.publish("exp.a", b"x", headers={"Nats-Expected-Last-Sequence": "7"})
    assert (wrong_seq.value.err_code, wrong_seq.value.description) == (10071, "wrong last sequence: 1")
    with pytest.raises(BadRequestError) as wrong_id:
        await js.publish("exp.a", b"x", headers={"Nats-Expected-Last-Msg-Id": "zz"})
    assert (wrong_id.value.err_code, wrong_id.value.description) == (10070, "wrong last msg ID: m1")
    with pytest.raises(BadRequestError) as wrong_stream:
        await js.publish("exp.a", b"x", stream="OTHER")
    assert wrong_stream.value.err_code == 10060
    assert (await js.publish("exp.a", b"ok", stream="EXP")).seq == 2
    with pytest.raises(NoStreamResponseError):
        await js.publish("nowhere.at.all", b"x")
    with pytest.raises(NotFoundError) as missing:
        await js.stream_info("NOPE")
    assert (missing.value.err_code, missing.value.description) == (10059, "stream not found")


async def test_get_msg_by_sequence_last_by_subject_and_direct(js):
    await js.add_stream(name="GET", subjects=["get.*"], allow_direct=True)
    for index in range(1, 7):
        await js.publish(f"get.{'ab'[index % 2]}", f"m{index}".encode(), headers={"X-Index": str(index)})
    message = await js.get_msg("GET", seq=3)
    assert (message.subject, message.seq, message.data) == ("get.b", 3, b"m3")
    assert message.headers["X-Index"] == "3"
    last = await js.get_last_msg("GET", "get.a")
    assert (last.seq, last.data) == (6, b"m6")
    direct = await js.get_msg("GET", seq=2, direct=True)
    assert (direct.subject, direct.seq, direct.data) == ("get.a", 2, b"m2")
    direct_last = await js.get_last_msg("GET", "get.b", direct=True)
    assert (direct_last.seq, direct_last.data) == (5, b"m5")
    with pytest.raises(NotFoundError) as missing:
        await js.get_msg("GET", seq=99)
    assert missing.value.err_code == 10037
    with pytest.raises(NotFoundError):
        await js.get_msg("GET", seq=99, direct=True)
    assert await js.delete_msg("GET", 3)
    with pytest.raises(NotFoundError):
        await js.get_msg("GET", seq=3)


async def test_purge_variants(js):
    await js.add_stream(name="PURGE", subjects=["purge.*"])
    for index in range(1, 13):
        await js.publish(f"purge.{'abc'[index % 3]}", str(index).encode())
    assert await js.purge_stream("PURGE", subject="purge.a")
    info = await js.stream_info("PURGE")
    assert (info.state.messages, info.state.first_seq) == (8, 1)
    assert await js.purge_stream("PURGE", seq=5)
    info = await js.stream_info("PURGE")
    assert (info.state.messages, info.state.first_seq) == (5, 5)
    assert await js.purge_stream("PURGE", keep=2)
    info = await js.stream_info("PURGE")
    assert (info.state.messages, info.state.first_seq, info.state.last_seq) == (2, 10, 12)
    assert await js.purge_stream("PURGE")
    info = await js.stream_info("PURGE")
    assert (info.state.messages, info.state.first_seq, info.state.last_seq) == (0, 13, 12)
    assert (await js.publish("purge.a", b"next")).seq == 13


async def test_limits_refusals(js):
    await js.add_stream(name="FULL", subjects=["full"], max_msgs=2, discard=DiscardPolicy.NEW)
    await js.publish("full", b"1")
    await js.publish("full", b"2")
    with pytest.raises(ServiceUnavailableError) as full:
        await js.publish("full", b"3")
    assert (full.value.err_code, full.value.description) == (10077, "maximum messages exceeded")
    await js.add_stream(name="SMALL", subjects=["small"], max_msg_size=16)
    with pytest.raises(BadRequestError) as big:
        await js.publish("small", b"x" * 17)
    assert (big.value.err_code, big.value.description) == (10054, "message size exceeds maximum allowed")


async def test_delete_stream_and_streams_info_paging(js, nc):
    for index in range(260):
        await js.add_stream(name=f"S{index:03}", subjects=[f"page.{index}"], storage=StorageType.MEMORY)
    first_page = await js.streams_info()
    second_page = await js.streams_info(offset=len(first_page))
    assert len(first_page) == 256
    names = sorted(info.config.name for info in first_page + second_page)
    assert names == [f"S{index:03}" for index in range(260)]
    raw = json.loads((await nc.request("$JS.API.STREAM.NAMES", b"", timeout=5)).data)
    assert (raw["total"], raw["offset"], raw["limit"], len(raw["streams"])) == (260, 0, 1024, 260)
    assert await js.find_stream_name_by_subject("page.42") == "S042"

    assert await js.delete_stream("S000")
    with pytest.raises(NotFoundError):
        await js.stream_info("S000")
    with pytest.raises(NotFoundError):
        await js.delete_stream("S000")
    assert (await js.account_info()).streams == 259
