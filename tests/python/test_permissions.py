"""nats-py 2.16 against jetcore with per-user permissions: a refused publish reaches the
error callback as nats-server's text (nats-py lowercases it), is not delivered, and the connection stays open; a
user without `$JS.API.STREAM.CREATE.X` cannot create stream X."""
import asyncio
import os
import tempfile

import nats
import pytest

from conftest import JetcoreServer, subscriptions_live

CONFIG = """
authorization {
  users = [
    {user: admin, password: a}
    {user: app, password: b, permissions: {
      publish: {allow: ["orders.*", "$JS.API.INFO", "$JS.API.STREAM.INFO.>"], deny: "orders.secret"},
      subscribe: "_INBOX.>" }}
  ]
}
"""


@pytest.fixture
def guarded():
    with tempfile.TemporaryDirectory(prefix="jetcore-py-perm-") as temp:
        config = os.path.join(temp, "jetcore.conf")
        with open(config, "w") as file:
            file.write(CONFIG)
        server = JetcoreServer(os.path.join(temp, "store"), extra_args=["-c", config])
        try:
            yield server
        finally:
            server.kill()


async def test_violations_reach_the_error_callback_and_the_connection_stays(guarded):
    errors = asyncio.Queue()

    async def on_error(error):
        await errors.put(str(error))

    admin = await nats.connect(guarded.url, user="admin", password="a", allow_reconnect=False)
    app = await nats.connect(guarded.url, user="app", password="b", error_cb=on_error,
                             allow_reconnect=False)
    received = []

    async def on_order(msg):
        received.append(msg.subject)

    await admin.subscribe("orders.*", cb=on_order)
    await subscriptions_live(admin)

    await app.publish("orders.secret", b"no")
    await app.publish("orders.open", b"yes")
    await app.flush()
    assert await asyncio.wait_for(errors.get(), 5) == 'nats: permissions violation for publish to "orders.secret"'
    await app.subscribe("orders.*")  # refused: the error comes asynchronously
    await app.flush()
    assert await asyncio.wait_for(errors.get(), 5) == 'nats: permissions violation for subscription to "orders.*"'

    js = app.jetstream(timeout=0.5)
    with pytest.raises(nats.errors.TimeoutError):
        await js.add_stream(name="X", subjects=["x.>"])
    assert await asyncio.wait_for(errors.get(), 5) == 'nats: permissions violation for publish to "$js.api.stream.create.x"'
    assert app.is_connected
    await admin.flush()
    assert received == ["orders.open"]
    await admin.close()
    await app.close()
