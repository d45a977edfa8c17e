#!/usr/bin/env python3
"""Core publish rate through nats-py, an independent client, so the comparison does not
rest on jetbench alone. Prints one JSON line like jetbench's examples/asyncnats_pub.

Usage: natspy_pub.py [--url URL] [--msgs N] [--size BYTES]
"""

import argparse
import asyncio
import json
import time

import nats

SUBJECT = "jetbench.natspy"
# nats-py buffers publishes and flushes when its pending buffer passes this size.
PENDING_SIZE_BYTES = 2 * 1024 * 1024


async def publish(url: str, messages: int, size: int) -> dict:
    client = await nats.connect(url, pending_size=PENDING_SIZE_BYTES, allow_reconnect=False)
    payload = b"a" * size
    start = time.perf_counter()
    for _ in range(messages):
        await client.publish(SUBJECT, payload)
    await client.flush()  # PING/PONG: the server has processed every publish
    elapsed = time.perf_counter() - start
    await client.close()
    return {
        "client": "nats-py",
        "messages": messages,
        "size": size,
        "elapsed_s": round(elapsed, 4),
        "msgs_per_s": round(messages / elapsed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default="nats://127.0.0.1:4222")
    parser.add_argument("--msgs", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=128)
    arguments = parser.parse_args()
    print(json.dumps(asyncio.run(publish(arguments.url, arguments.msgs, arguments.size))))


if __name__ == "__main__":
    main()
