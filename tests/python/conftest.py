"""Starts a real jetcore for each test: a fresh store, a random port read from the
server's own log line, SIGKILL at teardown (and on `kill()`; there is no graceful stop)."""
import os
import pathlib
import re
import subprocess
import tempfile
import threading

import nats
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"Listening for client connections on \S*:(\d+)")
START_TIMEOUT_SECONDS = 20
RESTART_ATTEMPTS = 8
RESTART_WAIT_SECONDS = 4


async def subscriptions_live(connection):
    """Returns once the subscriptions made on `connection` are live for every other
    connection. nats-py's flush() writes its PING straight to the socket, ahead of a SUB
    still queued for its flusher task, so the first PONG need not cover the SUB (seen in
    CI with nats-server as with jetcore); the flusher has run by the time it comes back,
    so the second PING follows the SUB and its PONG covers it."""
    await connection.flush()
    await connection.flush()


def jetcore_binary():
    binary = os.environ.get("JETCORE_BIN", str(ROOT / "target" / "release" / "jetcore"))
    if not os.access(binary, os.X_OK):
        pytest.fail(f"no jetcore binary at {binary}: run `cargo build --release` or set JETCORE_BIN")
    return binary


class JetcoreServer:
    def __init__(self, store_dir, shards="2", extra_args=()):
        self.store_dir = store_dir
        self.shards = shards
        self.extra_args = list(extra_args)
        self.port = None
        self.process = None
        self.log = []
        self._spawn("-1")

    @property
    def url(self):
        return f"nats://127.0.0.1:{self.port}"

    def _spawn(self, port, wait=START_TIMEOUT_SECONDS):
        if not self._try_spawn(port, wait):
            tail = "\n".join(self.log[-20:])
            pytest.fail(f"jetcore did not report its port within {wait} s:\n{tail}")

    def _try_spawn(self, port, wait, refuse_failed_opens=False):
        command = [jetcore_binary(), "-a", "127.0.0.1", "-p", port, "-sd", self.store_dir,
                   "--shards", self.shards, *self.extra_args]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        text=True)
        found = threading.Event()
        failed_open = threading.Event()

        def drain(stream):
            for line in stream:
                self.log.append(line.rstrip())
                if refuse_failed_opens and "stream failed to open" in line:
                    print(f"jetcore: {line.rstrip()}")
                    failed_open.set()
                match = LISTENING.search(line)
                if match and not found.is_set():
                    self.port = int(match.group(1))
                    found.set()

        threading.Thread(target=drain, args=(self.process.stderr,), daemon=True).start()
        # Streams are opened before the port is reported, so a failed open is logged first.
        if found.wait(wait) and not failed_open.is_set():
            return True
        self.kill()
        return False

    def kill(self):
        """SIGKILL: nothing gets a chance to flush."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def restart(self, shards=None):
        """kill -9, then start again on the same port and store.

        A start that does not report its port within a few seconds, or logs that a stream
        failed to open, is killed and tried again: jetcore's reopening of existing streams
        sometimes hangs, panics or fails with EOPNOTSUPP (known bugs, pinned down by
        tests/jetstream_restart_startup.rs); these tests are about what survives a restart,
        not about that."""
        self.kill()
        if shards is not None:
            self.shards = shards
        for attempt in range(1, RESTART_ATTEMPTS + 1):
            self.log.clear()
            if self._try_spawn(str(self.port), RESTART_WAIT_SECONDS, refuse_failed_opens=True):
                return
            print(f"jetcore restart attempt {attempt} hung or failed to open a stream; retrying")
        pytest.fail(f"jetcore did not restart in {RESTART_ATTEMPTS} attempts")


@pytest.fixture
def server():
    with tempfile.TemporaryDirectory(prefix="jetcore-py-") as temp:
        jetcore = JetcoreServer(os.path.join(temp, "store"))
        try:
            yield jetcore
        finally:
            jetcore.kill()


@pytest.fixture
async def nc(server):
    connection = await nats.connect(server.url, allow_reconnect=False)
    try:
        yield connection
    finally:
        await connection.close()


@pytest.fixture
def js(nc):
    return nc.jetstream(timeout=5)
