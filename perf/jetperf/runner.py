"""Runs the measurements: alternating servers round by round, each server started fresh
per round, every scenario once per round; then medians per (server, scenario)."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from .scenarios import Scenario
from .servers import LOOPBACK, RunningServer, ServerSpec, ServerUnavailable, free_port

JETBENCH_TIMEOUT_S = 120
CLIENT_TIMEOUT_S = 60
INDEPENDENT_CLIENT_MESSAGES = {"jetbench": 2_000_000, "async-nats": 1_000_000, "nats-py": 200_000}


@dataclasses.dataclass
class Settings:
    jetbench: pathlib.Path
    asyncnats_pub: pathlib.Path
    null_server: pathlib.Path
    natspy_pub: pathlib.Path
    python: pathlib.Path
    binaries: dict
    runs: int
    seconds: float
    messages: int
    server_cpus: str | None
    client_cpus: str | None
    budget_s: float  # no round starts that would likely end past this


@dataclasses.dataclass
class Results:
    """Raw results: results[server][scenario] = list of jetbench JSON reports."""

    runs: dict = dataclasses.field(default_factory=dict)
    clients: dict = dataclasses.field(default_factory=dict)  # clients[server][client] = [msgs/s]
    skipped: dict = dataclasses.field(default_factory=dict)  # server -> reason
    failures: list = dataclasses.field(default_factory=list)
    rounds_completed: int = 0
    budget_note: str = ""

    def add(self, server: str, scenario: str, report: dict) -> None:
        self.runs.setdefault(server, {}).setdefault(scenario, []).append(report)


def log(message: str) -> None:
    print(f"compare: {message}", file=sys.stderr, flush=True)


def pinned(command: list[str], cpus: str | None) -> list[str]:
    return ["taskset", "-c", cpus, *command] if cpus else command


def run_jetbench(settings: Settings, url: str, arguments: list[str]) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as output:
        command = [str(settings.jetbench), *arguments, "--url", url, "--quiet", "--json", output.name]
        if settings.client_cpus:
            command += ["--cpus", settings.client_cpus]
        result = subprocess.run(pinned(command, settings.client_cpus), capture_output=True, text=True,
                                timeout=JETBENCH_TIMEOUT_S)
        if result.returncode != 0:
            raise RuntimeError(f"jetbench {' '.join(arguments)} failed: {result.stderr.strip()}")
        return json.loads(pathlib.Path(output.name).read_text())


def run_scenario(settings: Settings, spec: ServerSpec, server: RunningServer, scenario: Scenario) -> dict:
    """One jetbench run; a memory scenario gets a server of its own so that what earlier
    scenarios left in the heap does not blur the growth it measures."""
    if not scenario.memory:
        arguments = scenario.jetbench_arguments(settings.seconds, settings.messages, server.process.pid)
        return run_jetbench(settings, server.url, arguments)
    with RunningServer(spec, settings.binaries, settings.server_cpus) as fresh:
        arguments = scenario.jetbench_arguments(settings.seconds, settings.messages, fresh.process.pid)
        return run_jetbench(settings, fresh.url, arguments)


def run_client(settings: Settings, client: str, url: str) -> float:
    """Core publish msgs/s of one client (jetbench, async-nats or nats-py) at 128 B."""
    messages = INDEPENDENT_CLIENT_MESSAGES[client]
    if client == "jetbench":
        return run_jetbench(settings, url, ["pub", "--msgs", str(messages)])["msgs_per_s"]
    if client == "async-nats":
        command = [str(settings.asyncnats_pub), url, str(messages), "128"]
    else:
        command = [str(settings.python), str(settings.natspy_pub), "--url", url, "--msgs", str(messages)]
    result = subprocess.run(pinned(command, settings.client_cpus), capture_output=True, text=True,
                            timeout=CLIENT_TIMEOUT_S)
    if result.returncode != 0:
        raise RuntimeError(f"{client} failed: {result.stderr.strip()[-500:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])["msgs_per_s"]


def measure(settings: Settings, servers: list[ServerSpec], scenarios: list[Scenario],
            clients: list[str]) -> Results:
    results = Results()
    started = time.monotonic()
    for round_index in range(settings.runs):
        elapsed = time.monotonic() - started
        if round_index > 0 and elapsed + elapsed / round_index > settings.budget_s:
            results.budget_note = (f"stopped after {round_index} of {settings.runs} rounds: another round "
                                   f"(~{elapsed / round_index:.0f} s) would pass the {settings.budget_s:.0f} s budget")
            log(results.budget_note)
            break
        # Rotate the order each round so no server always runs first (warm caches, heat).
        shift = round_index % len(servers)
        for spec in servers[shift:] + servers[:shift]:
            if spec.key in results.skipped:
                continue
            log(f"round {round_index + 1}/{settings.runs}: {spec.label}")
            try:
                with RunningServer(spec, settings.binaries, settings.server_cpus) as server:
                    run_round(settings, spec, server, scenarios, clients, results)
            except ServerUnavailable as reason:
                log(f"SKIPPING {spec.label}: {reason}")
                results.skipped[spec.key] = str(reason)
        results.rounds_completed = round_index + 1
    return results


def run_round(settings: Settings, spec: ServerSpec, server: RunningServer, scenarios: list[Scenario],
              clients: list[str], results: Results) -> None:
    for scenario in scenarios:
        if spec.scenario_key not in scenario.servers:
            continue
        try:
            report = run_scenario(settings, spec, server, scenario)
        except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as error:
            log(f"  {scenario.key}: FAILED: {error}")
            results.failures.append(f"{spec.key} {scenario.key}: {error}")
            continue
        log(f"  {scenario.key}: {report['msgs_per_s']:,.0f}/s"
            + (f", p99 {report['latency']['p99_us']:,.0f} us" if report.get("latency") else "")
            + (f", {report['memory']['bytes_per_object']:,.0f} B/object" if report.get("memory") else ""))
        results.add(spec.key, scenario.key, report)
    if spec.sync_always:
        return
    for client in clients:
        try:
            rate = run_client(settings, client, server.url)
        except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError, KeyError) as error:
            log(f"  client {client}: FAILED: {error}")
            results.failures.append(f"{spec.key} client {client}: {error}")
            continue
        log(f"  client {client}: {rate:,.0f} msgs/s")
        results.clients.setdefault(spec.key, {}).setdefault(client, []).append(rate)


def measure_client_ceiling(settings: Settings, clients: list[str]) -> dict:
    """Core publish msgs/s of each client against a null server that discards everything:
    the client's own ceiling, independent of any broker."""
    port = free_port()
    # Not pinned: the null server must never be what limits the client (measured: pinned to
    # one busy CPU it capped jetbench at a quarter of its unpinned rate).
    command = [str(settings.null_server), str(port)]
    server = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    ceiling = {}
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                socket.create_connection((LOOPBACK, port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        url = f"nats://{LOOPBACK}:{port}"
        for client in clients:
            samples = []
            for _ in range(settings.runs):
                try:
                    samples.append(run_client(settings, client, url))
                except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError, KeyError) as error:
                    log(f"  ceiling {client}: FAILED: {error}")
            if samples:
                ceiling[client] = statistics.median(samples)
                log(f"  ceiling {client}: {ceiling[client]:,.0f} msgs/s")
    finally:
        server.terminate()
        server.wait()
    return ceiling


def median_report(reports: list[dict], key=lambda report: report["msgs_per_s"]) -> dict | None:
    """The report with the median `key` (by default the headline rate)."""
    reports = [report for report in reports if key(report) is not None]
    if not reports:
        return None
    ordered = sorted(reports, key=key)
    return ordered[(len(ordered) - 1) // 2]


def median_of(reports: list[dict], pick) -> float | None:
    values = [pick(report) for report in reports]
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def p99(report: dict) -> float | None:
    latency = report.get("latency")
    return latency["p99_us"] if latency else None
