"""Starting and stopping the servers under test, each on a loopback port with a fresh store.

A server that does not answer with an INFO line within READY_TIMEOUT_S is reported and
skipped, never waited for: jetcore may not be complete yet.
"""

from __future__ import annotations

import dataclasses
import pathlib
import shutil
import socket
import subprocess
import tempfile
import time

READY_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 10.0
LOG_TAIL_LINES = 8
LOOPBACK = "127.0.0.1"


@dataclasses.dataclass(frozen=True)
class ServerSpec:
    """One configuration of a server under test."""

    key: str  # short id used in results: nats, nats-sync, jetcore
    label: str  # what tables and plots call it
    kind: str  # nats-server or jetcore
    sync_always: bool = False
    extra_args: tuple[str, ...] = ()  # appended to the command line
    runs_like: str = ""  # the server whose scenarios it runs (default: its own key)
    routes_core: bool = True  # whether it routes core messages between connections (request-reply)

    @property
    def scenario_key(self) -> str:
        return self.runs_like or self.key


NATS = ServerSpec("nats", "nats-server (default)", "nats-server")
NATS_SYNC = ServerSpec("nats-sync", "nats-server (sync_interval: always)", "nats-server", sync_always=True)
JETCORE = ServerSpec("jetcore", "jetcore", "jetcore")
# One shard: no cross-shard hop between a connection and its stream (not in the defaults;
# `--servers ...,jetcore1` asks for it).
JETCORE1 = ServerSpec("jetcore1", "jetcore --shards 1", "jetcore", extra_args=("--shards", "1"), runs_like="jetcore")
# Not a server: the durable stand-in (tools/jetbench/examples/durable_standin.rs) answers each
# JetStream publish after one blocking durable write, on the connection's thread. What a
# client reaches against it is the floor for that client (perf/latency).
STANDIN = ServerSpec("standin", "durable stand-in (no server)", "standin", routes_core=False)
ALL_SERVERS = (NATS, NATS_SYNC, JETCORE)
OPTIONAL_SERVERS = (JETCORE1,)


class ServerUnavailable(Exception):
    """The server could not be started or did not answer."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


class RunningServer:
    """A started server; use as a context manager so it is always stopped and cleaned."""

    def __init__(self, spec: ServerSpec, binaries: dict[str, pathlib.Path], cpus: str | None):
        self.spec = spec
        self.port = free_port()
        self.url = f"nats://{LOOPBACK}:{self.port}"
        self.store = pathlib.Path(tempfile.mkdtemp(prefix=f"jetperf-{spec.key}-"))
        self.log_path = self.store / "server.log"
        self.command = self._command(binaries)
        if cpus:
            self.command = ["taskset", "-c", cpus, *self.command]
        self.process: subprocess.Popen | None = None

    def _command(self, binaries: dict[str, pathlib.Path]) -> list[str]:
        binary = binaries.get(self.spec.kind)
        if binary is None or not pathlib.Path(binary).exists():
            raise ServerUnavailable(f"{self.spec.label}: binary not found ({binary})")
        data = self.store / "data"
        if self.spec.kind == "standin":
            return [str(binary), str(self.port), str(self.store)]
        if self.spec.kind in ("jetcore", "jetcore-base"):
            return [str(binary), "-a", LOOPBACK, "-p", str(self.port), "-js", "-sd", str(data), *self.spec.extra_args]
        if not self.spec.sync_always:
            return [str(binary), "-a", LOOPBACK, "-p", str(self.port), "-js", "-sd", str(data)]
        config = self.store / "server.conf"
        config.write_text(
            f'listen: "{LOOPBACK}:{self.port}"\n'
            "jetstream {\n"
            f'  store_dir: "{data}"\n'
            "  sync_interval: always\n"
            "}\n"
        )
        return [str(binary), "-c", str(config)]

    def __enter__(self) -> "RunningServer":
        log = open(self.log_path, "wb")
        self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        try:
            self._await_info()
        except ServerUnavailable:
            self.__exit__(None, None, None)
            raise
        return self

    def _await_info(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        last_error = "no answer"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerUnavailable(
                    f"{self.spec.label} exited with code {self.process.returncode} at start; "
                    f"log tail:\n{self.log_tail()}"
                )
            try:
                with socket.create_connection((LOOPBACK, self.port), timeout=1) as probe:
                    if probe.recv(5) == b"INFO ":
                        return
                    last_error = "first bytes were not INFO"
            except OSError as error:
                last_error = str(error)
            time.sleep(0.1)
        raise ServerUnavailable(
            f"{self.spec.label} did not answer on {self.url} within {READY_TIMEOUT_S} s "
            f"({last_error}); log tail:\n{self.log_tail()}"
        )

    def log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-LOG_TAIL_LINES:]) or "(empty log)"

    def __exit__(self, *exception) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.store, ignore_errors=True)


def server_version(spec: ServerSpec, binaries: dict[str, pathlib.Path]) -> str:
    binary = binaries.get(spec.kind)
    if binary is None or not pathlib.Path(binary).exists():
        return "not built"
    try:
        result = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=5)
        return (result.stdout or result.stderr).strip().splitlines()[0] if (result.stdout or result.stderr) else "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"
