"""nats-py 2.16: streams and every acknowledged message survive jetcore being killed
with SIGKILL and restarted, also with a different --shards count."""
import nats
import pytest
from nats.js.errors import NotFoundError


async def connect(server):
    nc = await nats.connect(server.url, allow_reconnect=False)
    return nc, nc.jetstream(timeout=5)


async def test_acked_messages_survive_kill_9_and_shard_changes(server):
    nc, js = await connect(server)
    acked = {}
    created = {}
    for name in ("ALPHA", "BETA", "GAMMA"):
        info = await js.add_stream(name=name, subjects=[f"{name.lower()}.*"], max_msgs_per_subject=50)
        created[name] = info.config
        for index in range(40):
            subject = f"{name.lower()}.{index % 5}"
            ack = await js.publish(subject, f"{name}-{index}".encode(), headers={"Nats-Msg-Id": f"{name}{index}"})
            acked[(name, ack.seq)] = (subject, f"{name}-{index}".encode())
    await js.purge_stream("GAMMA", subject="gamma.0")
    for seq in (1, 6, 11, 16, 21, 26, 31, 36):
        del acked[("GAMMA", seq)]
    await nc.close()

    for shards in ("2", "1", "3"):
        server.restart(shards=shards)
        nc, js = await connect(server)
        for name, config in created.items():
            info = await js.stream_info(name)
            assert info.config == config, f"{name} config after restart with --shards {shards}"
            expected = sorted(seq for (stream, seq) in acked if stream == name)
            assert info.state.messages == len(expected)
            assert info.state.last_seq == 40
        for (name, seq), (subject, payload) in sorted(acked.items()):
            message = await js.get_msg(name, seq=seq)
            assert (message.subject, message.data) == (subject, payload), f"{name} seq {seq}"
        with pytest.raises(NotFoundError):
            await js.get_msg("GAMMA", seq=1)
        # Dedupe survives the restart; new publishes continue at last_seq + 1.
        duplicate = await js.publish("alpha.0", b"again", headers={"Nats-Msg-Id": "ALPHA39"})
        assert (duplicate.seq, duplicate.duplicate) == (40, True)
        await nc.close()

    nc, js = await connect(server)
    ack = await js.publish("beta.new", b"after restarts")
    assert (ack.stream, ack.seq) == ("BETA", 41)
    await nc.close()
