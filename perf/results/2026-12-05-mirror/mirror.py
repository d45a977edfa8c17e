"""Mirror catch-up time: fill a file stream, then create a mirror and time until it holds
every message. Usage: mirror.py URL MSGS"""
import asyncio, json, sys, time
import nats

async def main(url, count):
    nc = await nats.connect(url)
    js = nc.jetstream()
    async def api(subject, body):
        reply = await nc.request(subject, json.dumps(body).encode(), timeout=30)
        return json.loads(reply.data)
    while True:
        info = await api("$JS.API.STREAM.INFO.SRC_0", {})
        if info.get("state", {}).get("messages", 0) >= count:
            break
        await asyncio.sleep(0.05)
    started = time.monotonic()
    created = await api("$JS.API.STREAM.CREATE.MIR", {"name": "MIR", "mirror": {"name": "SRC_0"}})
    assert "error" not in created, created
    while True:
        info = await api("$JS.API.STREAM.INFO.MIR", {})
        if info["state"]["messages"] >= count:
            break
        await asyncio.sleep(0.01)
    elapsed = time.monotonic() - started
    print(f"mirror caught up {count} in {elapsed:.2f} s: {count/elapsed:,.0f} msgs/s")
    await nc.close()

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
