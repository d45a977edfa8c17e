#!/usr/bin/env python3
"""Driver of perf/compare (run that script: it prepares the venv and the binaries).

Runs the scenarios of jetperf/scenarios.py against nats-server (default and
sync_interval: always) and jetcore, alternating, and writes
perf/results/<date>-<commit>/<date>-<commit>.md with its plots and raw JSON.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import re
import subprocess
import sys
import time

from jetperf import machine, plots, report, runner
from jetperf.scenarios import BY_KEY, CONSUME_MESSAGES, SCENARIOS
from jetperf.servers import ALL_SERVERS, OPTIONAL_SERVERS, server_version

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
CLIENTS = ["jetbench", "async-nats", "nats-py"]
# The whole comparison must finish within 10 minutes; this leaves time for the client
# ceiling, the plots and the build that precede and follow the rounds.
DEFAULT_BUDGET_MINUTES = 8.5
LATEST_MARKER = re.compile(r"(<!-- latest-result -->).*?(<!-- /latest-result -->)", re.S)


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="rounds; medians are over these (default 5)")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of each timed measurement")
    parser.add_argument("--messages", type=int, default=CONSUME_MESSAGES, help="prefill of consume scenarios")
    parser.add_argument("--scenarios", default=",".join(BY_KEY), help="comma-separated scenario keys")
    parser.add_argument("--servers", default=",".join(spec.key for spec in ALL_SERVERS))
    parser.add_argument("--budget-minutes", type=float, default=DEFAULT_BUDGET_MINUTES,
                        help="start no round that would likely end after this (default %(default)s)")
    parser.add_argument("--no-clients", action="store_true", help="skip the async-nats / nats-py checks")
    parser.add_argument("--server-cpus", help="CPU list for servers (default: first half)")
    parser.add_argument("--client-cpus", help="CPU list for clients (default: second half)")
    parser.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    parser.add_argument("--nats-server", default=HERE / ".venv" / "bin" / "nats-server")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--output", default=HERE / "results")
    parser.add_argument("--idle", type=float, default=0, metavar="SECONDS",
                        help="also measure idle cost (issue 28): server CPU and wake-ups over SECONDS with "
                             "no traffic, empty and with 100 streams and 1 000 durables, each server "
                             "(tools/idlebench.py; 30 is the issue's window; about 4 × (SECONDS + 8) s more)")
    parser.add_argument("--churn", action="store_true",
                        help="also run the connection-churn, storm and slow-consumer attacks (issue 33): RSS "
                             "before, at peak and 5 s after for both servers (the attack tool; about 5 minutes)")
    return parser.parse_args()


def default_cpus(arguments: argparse.Namespace) -> tuple[str | None, str | None]:
    if arguments.server_cpus or arguments.client_cpus:
        return arguments.server_cpus, arguments.client_cpus
    count = os.cpu_count() or 1
    if count < 2:
        return None, None
    half = count // 2
    server = "0" if half == 1 else f"0-{half - 1}"
    client = str(half) if count - half == 1 else f"{half}-{count - 1}"
    return server, client


def main() -> int:
    arguments = parse_arguments()
    started = time.monotonic()
    release = pathlib.Path(arguments.target_dir) / "release"
    server_cpus, client_cpus = default_cpus(arguments)
    binaries = {"nats-server": pathlib.Path(arguments.nats_server), "jetcore": release / "jetcore"}
    settings = runner.Settings(
        jetbench=release / "jetbench", asyncnats_pub=release / "examples" / "asyncnats_pub",
        null_server=release / "examples" / "null_server", natspy_pub=HERE / "natspy_pub.py",
        python=pathlib.Path(arguments.python), binaries=binaries, runs=arguments.runs,
        seconds=arguments.seconds, messages=arguments.messages,
        server_cpus=server_cpus, client_cpus=client_cpus, budget_s=arguments.budget_minutes * 60,
    )
    scenarios = [BY_KEY[key] for key in arguments.scenarios.split(",") if key]
    wanted = arguments.servers.split(",")
    servers = [spec for spec in ALL_SERVERS + OPTIONAL_SERVERS if spec.key in wanted]
    unknown = set(wanted) - {spec.key for spec in ALL_SERVERS + OPTIONAL_SERVERS}
    if unknown:
        sys.exit(f"compare: unknown servers {sorted(unknown)}; known: "
                 f"{[spec.key for spec in ALL_SERVERS + OPTIONAL_SERVERS]}")
    clients = [] if arguments.no_clients else CLIENTS
    info = machine.describe()
    versions = {spec.key: server_version(spec, binaries) for spec in servers}

    results = runner.measure(settings, servers, scenarios, clients)
    ceiling = runner.measure_client_ceiling(settings, clients) if clients else {}

    stem = f"{datetime.date.today().isoformat()}-{info['commit']}"
    output = pathlib.Path(arguments.output) / stem
    output.mkdir(parents=True, exist_ok=True)
    title = f"jetcore vs nats-server, {stem}"
    plot_files = {"throughput": f"{stem}-throughput.png"}
    plots.throughput(results, servers, scenarios, output / plot_files["throughput"], title)
    if plots.latency(results, servers, scenarios, output / f"{stem}-latency.png", title):
        plot_files["latency"] = f"{stem}-latency.png"
    idle = idle_section(arguments, binaries, servers) if arguments.idle else ""
    idle += churn_section(binaries, release) if arguments.churn else ""
    markdown = report.render(title=title, machine=info, settings=settings, servers=servers, versions=versions,
                             scenarios=scenarios, results=results, ceiling=ceiling, clients=clients,
                             plots=plot_files, elapsed_s=time.monotonic() - started) + idle
    (output / f"{stem}.md").write_text(markdown)
    raw = {"machine": info, "versions": versions, "runs": results.runs, "clients": results.clients,
           "client_ceiling": ceiling, "skipped": results.skipped, "failures": results.failures}
    (output / f"{stem}.json").write_text(json.dumps(raw, indent=1))
    link_latest(output / f"{stem}.md")
    print(markdown)
    print(f"\ncompare: wrote {output / (stem + '.md')}", file=sys.stderr)
    return 0


def idle_section(arguments: argparse.Namespace, binaries: dict, servers: list) -> str:
    """Idle CPU and wake-ups of each server (tools/idlebench.py, no latency samples), as a
    section of the report."""
    keys = [spec.key for spec in servers if spec.key in ("nats", "jetcore")]
    command = [str(arguments.python), str(ROOT / "tools" / "idlebench.py"),
               "--nats-server", str(binaries["nats-server"]), "--jetcore", str(binaries["jetcore"]),
               "--servers", ",".join(keys), "--seconds", str(arguments.idle), "--samples", "0"]
    print("compare: idle cost", file=sys.stderr, flush=True)
    finished = subprocess.run(command, capture_output=True, text=True)
    output = finished.stdout.strip() or finished.stderr.strip()
    return ("\n## Idle cost (issue 28)\n\nNo client traffic; server CPU from /proc (100 ticks = one "
            "CPU-second), wake-ups = context switches of all its threads. Targets: idle CPU ≤ "
            "nats-server's + 0.2 % of a CPU per shard; ≤ 20 wake-ups/s per idle shard.\n\n"
            f"```\n$ {' '.join(command[1:])}\n{output}\n```\n")


def churn_section(binaries: dict, release: pathlib.Path) -> str:
    """The attack tool's churn, storm and slow-consumer rows (both servers, defaults,
    unpinned), as a section of the report."""
    rows = []
    for only in ("churn", "storm", "slow_consumer"):
        print(f"compare: attack {only}", file=sys.stderr, flush=True)
        command = [str(release / "attack"), "--jetcore", str(binaries["jetcore"]),
                   "--nats-server", str(binaries["nats-server"]), "--only", only]
        finished = subprocess.run(command, capture_output=True, text=True)
        lines = finished.stdout.strip().splitlines()
        rows += lines if not rows else lines[2:]
        if finished.returncode != 0:
            rows.append(f"(attack {only} exited with {finished.returncode}: {finished.stderr.strip()[-300:]})")
    return ("\n## Connection churn and slow consumers (issue 33)\n\nRSS before, at peak and 5 s after "
            "(target: within 1.2× of the start 5 s after 30 000 rounds; peaks ≤ nats-server's).\n\n"
            + "\n".join(rows) + "\n")


def link_latest(result: pathlib.Path) -> None:
    """Points the marked line of perf/README.md at the newest result (only for results
    written under perf/, where the link resolves)."""
    readme = HERE / "README.md"
    if not readme.exists() or HERE not in result.resolve().parents:
        return
    relative = os.path.relpath(result, HERE)
    text = readme.read_text()
    updated = LATEST_MARKER.sub(rf"\1 [{result.stem}]({relative}) \2", text)
    if updated != text:
        readme.write_text(updated)


if __name__ == "__main__":
    sys.exit(main())
