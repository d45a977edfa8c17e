#!/usr/bin/env python3
"""Driver of perf/latency (run that script: it prepares the venv and the binaries).

One in flight, durable (issue 21): in every round, alternating the servers,
  - the disk's own floor: disk-floor, 4 KiB O_DIRECT write + fdatasync at queue depth 1,
    in a directory on the same filesystem as the servers' stores, every variant;
  - the whole path's floor: disk-floor's durable echo, each write asked for and answered
    over loopback TCP by one thread, no server;
  - the loopback floor: core request-reply with one in flight (jetbench req) on each server;
  - JetStream publish with one in flight (jetbench js-pub-sync, 128 B, file stream) on
    nats-server default, nats-server sync_interval: always, and jetcore, with server CPU;
  - KV put with one in flight (async-nats, examples/asyncnats_kv) on the same three;
  - both clients against the durable stand-in (examples/durable_standin: the echo's
    thread speaking NATS), the floor for each client: what any server that acks after
    the disk can show it.
Writes perf/results/<date>-latency-<commit>/ with the table (medians over rounds), the raw
JSON (full HdrHistogram curves) and a percentile plot when matplotlib is there.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

from jetperf import machine
from jetperf.runner import Settings, run_jetbench
from jetperf.servers import JETCORE, JETCORE1, NATS, NATS_SYNC, STANDIN, RunningServer, ServerUnavailable

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
SERVERS = (NATS, NATS_SYNC, JETCORE, STANDIN)
# The disk's floor for issue 21's p50 target: the fastest way (lowest p50 in the same round)
# to make a 4 KiB write durable into blocks already written (jetcore zeroes ahead, so its
# fdatasyncs are cache flushes too).
FLOOR_KEY = ("disk", "floor")
# The whole path's floor (disk-floor's echo variants): a client asks for each durable
# write over loopback TCP and waits for its answer, with no server in between. Its rate
# and tail are the least any server that acknowledges after the disk pays; the fastest
# way of the round (highest rate).
ECHO_KEY = ("echo", "floor")
KV_TIMEOUT_S = 120
CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each timed measurement")
    parser.add_argument("--kv-puts", type=int, default=3000)
    parser.add_argument("--servers", default=",".join(spec.key for spec in SERVERS),
                        help="comma-separated: nats, nats-sync, jetcore, standin (the clients' floor), "
                             "and jetcore1 (--shards 1)")
    parser.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    parser.add_argument("--nats-server", default=HERE / ".venv" / "bin" / "nats-server")
    parser.add_argument("--output", default=HERE / "results")
    parser.add_argument("--base", metavar="BIN",
                        help="also run this jetcore binary (an earlier build), as server 'base'")
    parser.add_argument("--jetcore-variant", action="append", default=[], metavar="KEY:VAR=VALUE",
                        help="also run jetcore with this environment variable set, as server KEY")
    return parser.parse_args()


def jetcore_variants(arguments: argparse.Namespace) -> dict:
    """KEY -> (ServerSpec, {VAR: VALUE}) for each --jetcore-variant."""
    variants = {}
    for text in arguments.jetcore_variant:
        key, assignment = text.split(":", 1)
        name, value = assignment.split("=", 1)
        variants[key] = (dataclasses.replace(JETCORE, key=key, label=f"jetcore {name}={value}"), {name: value})
    return variants


def cpu_ticks(pid: int) -> int:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15 of the line)


def disk_floor(release: pathlib.Path, seconds: float) -> list[dict]:
    # The servers' stores are made with tempfile too, so this is their filesystem.
    with tempfile.TemporaryDirectory(prefix="jetperf-disk-") as directory, \
            tempfile.NamedTemporaryFile(suffix=".json") as output:
        command = [str(release / "disk-floor"), "--dir", directory, "--duration", f"{seconds}s",
                   "--json", output.name]
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=60 + 20 * seconds)
        return json.loads(pathlib.Path(output.name).read_text())


def kv_puts(release: pathlib.Path, url: str, puts: int) -> dict:
    command = [str(release / "examples" / "asyncnats_kv"), url, str(puts), "0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=KV_TIMEOUT_S)
    if result.returncode != 0:
        raise RuntimeError(f"asyncnats_kv failed: {result.stderr.strip()[-300:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def server_round(settings: Settings, release: pathlib.Path, spec, arguments, samples: dict,
                 environment: dict) -> None:
    saved = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)
    server = RunningServer(spec, settings.binaries, None)
    try:
        server.__enter__()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    try:
        measure_server(settings, release, spec, arguments, samples, server)
    finally:
        server.__exit__(None, None, None)


def measure_server(settings: Settings, release: pathlib.Path, spec, arguments, samples: dict,
                   server: RunningServer) -> None:
    pid = server.process.pid
    if not spec.sync_always and spec.routes_core:
        samples.setdefault(("req", spec.key), []).append(
            run_jetbench(settings, server.url, ["req", "--duration", f"{settings.seconds}s"]))
    before = cpu_ticks(pid)
    report = run_jetbench(settings, server.url, ["js-pub-sync", "--duration", f"{settings.seconds}s"])
    ticks = cpu_ticks(pid) - before
    report["server_cpu_us_per_msg"] = ticks / CLOCK_TICKS_PER_S * 1e6 / max(report["messages_acknowledged"], 1)
    samples.setdefault(("js-pub-sync", spec.key), []).append(report)
    try:
        samples.setdefault(("kv-put", spec.key), []).append(kv_puts(release, server.url, arguments.kv_puts))
    except (OSError, RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as error:
        print(f"latency: {spec.key} kv-put FAILED: {error}", file=sys.stderr)


def measure(arguments: argparse.Namespace) -> dict:
    release = pathlib.Path(arguments.target_dir) / "release"
    binaries = {"nats-server": pathlib.Path(arguments.nats_server), "jetcore": release / "jetcore",
                "standin": release / "examples" / "durable_standin"}
    if arguments.base:
        binaries["jetcore-base"] = pathlib.Path(arguments.base)
    settings = Settings(jetbench=release / "jetbench", asyncnats_pub=release, null_server=release,
                        natspy_pub=HERE, python=pathlib.Path(sys.executable), binaries=binaries,
                        runs=arguments.rounds, seconds=arguments.seconds, messages=0,
                        server_cpus=None, client_cpus=None, budget_s=0)
    servers = [spec for spec in SERVERS + (JETCORE1,) if spec.key in arguments.servers.split(",")]
    variants = jetcore_variants(arguments)
    servers += [spec for spec, _ in variants.values()]
    if arguments.base:
        servers.append(dataclasses.replace(JETCORE, key="base", label=f"jetcore base ({arguments.base})",
                                           kind="jetcore-base", runs_like="jetcore"))
    samples: dict = {}
    for round_index in range(arguments.rounds):
        print(f"latency: round {round_index + 1}/{arguments.rounds}: disk floor", file=sys.stderr, flush=True)
        reports = disk_floor(release, arguments.seconds / 2)
        for report in reports:
            samples.setdefault(("disk", report["scenario"]), []).append(report)
        written = [report for report in reports if report["scenario"].endswith("-written") and report["latency"]
                   and not report["scenario"].startswith("echo-")]
        if written:
            samples.setdefault(FLOOR_KEY, []).append(min(written, key=lambda report: report["latency"]["p50_us"]))
        echoes = [report for report in reports if report["scenario"].startswith("echo-") and report["latency"]]
        if echoes:
            samples.setdefault(ECHO_KEY, []).append(max(echoes, key=lambda report: report["msgs_per_s"]))
        shift = round_index % len(servers)
        for spec in servers[shift:] + servers[:shift]:
            print(f"latency: round {round_index + 1}/{arguments.rounds}: {spec.label}", file=sys.stderr, flush=True)
            try:
                environment = variants[spec.key][1] if spec.key in variants else {}
                server_round(settings, release, spec, arguments, samples, environment)
            except (ServerUnavailable, RuntimeError, subprocess.TimeoutExpired) as error:
                print(f"latency: {spec.key} FAILED: {error}", file=sys.stderr)
    return samples


def median(values: list) -> float | None:
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def latency_of(report: dict, field: str) -> float | None:
    latency = report.get("latency")
    return latency[field] if latency else None


def row(samples: list[dict]) -> dict:
    """Medians over rounds of a jetbench-shaped report list."""
    return {
        "rate": median([report["msgs_per_s"] for report in samples]),
        "p50": median([latency_of(report, "p50_us") for report in samples]),
        "p90": median([latency_of(report, "p90_us") for report in samples]),
        "p99": median([latency_of(report, "p99_us") for report in samples]),
        "p999": median([latency_of(report, "p999_us") for report in samples]),
        "cpu": median([report.get("server_cpu_us_per_msg") for report in samples]),
        "runs": len(samples),
    }


def number(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def render(samples: dict, info: dict, arguments: argparse.Namespace, plot: str | None) -> str:
    lines = [f"# One in flight, durable: jetcore, nats-server and the floors ({info['commit']})", "",
             f"{info['nproc']} CPUs ({info['cpu']}), kernel {info['kernel']}, load average at start "
             f"{' '.join(f'{load:.2f}' for load in info['load_average'])}; {arguments.rounds} rounds, servers "
             f"alternating and rotating, {arguments.seconds:g} s per measurement, unpinned, default "
             "configurations; medians over rounds. 128 B payloads.", "",
             "Rerun: `perf/latency` (or `perf/latency --rounds 5 --seconds 5`).", "",
             "| measurement | server | per s | p50 µs | p90 µs | p99 µs | p99.9 µs | server CPU µs/msg |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    order = sorted(samples, key=lambda key: ["disk", "echo", "req", "js-pub-sync", "kv-put"].index(key[0]))
    for key in order:
        if key[0] == "kv-put":
            continue
        values = row(samples[key])
        lines.append(f"| {key[0]} | {key[1]} | {number(values['rate'])} | {number(values['p50'])} | "
                     f"{number(values['p90'])} | {number(values['p99'])} | {number(values['p999'])} | "
                     f"{number(values['cpu'], 1)} |")
    lines += ["", "KV put, one in flight (async-nats `kv.put`, 128 B, history 1):", "",
              "| server | puts/s | p50 µs | p99 µs |", "|---|---:|---:|---:|"]
    for key in [key for key in order if key[0] == "kv-put"]:
        runs = samples[key]
        lines.append(f"| {key[1]} | {number(median([r['put_per_s'] for r in runs]))} | "
                     f"{number(median([r['put_p50_us'] for r in runs]))} | "
                     f"{number(median([r['put_p99_us'] for r in runs]))} |")
    lines += ["", *targets(samples)]
    if plot:
        lines += ["", f"![latency by percentile]({plot})"]
    return "\n".join(lines) + "\n"


def targets(samples: dict) -> list[str]:
    """Issue 21's targets, each with the figures it compares."""
    def get(key, field):
        return row(samples[key])[field] if key in samples else None

    disk, request = get(FLOOR_KEY, "p50"), get(("req", "nats"), "p50")
    ours, sync = ("js-pub-sync", "jetcore"), ("js-pub-sync", "nats-sync")
    lines = ["Targets (issue 21):", ""]
    if None not in (disk, request, get(ours, "p50")):
        budget = disk + request + 30
        lines.append(f"- p50 {get(ours, 'p50'):,.0f} µs ≤ disk {disk:,.0f} + request-reply {request:,.0f} + 30 = "
                     f"{budget:,.0f} µs: {'met' if get(ours, 'p50') <= budget else 'NOT met'}")
    if None not in (get(ours, "p99"), get(sync, "p99")):
        lines.append(f"- p99 {get(ours, 'p99'):,.0f} µs ≤ 0.5 × sync-always {get(sync, 'p99'):,.0f} µs: "
                     f"{'met' if get(ours, 'p99') <= 0.5 * get(sync, 'p99') else 'NOT met'}")
    if None not in (get(ours, "rate"), get(sync, "rate")):
        ratio = get(ours, "rate") / get(sync, "rate")
        lines.append(f"- rate {ratio:.2f}× sync-always (target ≥ 2): {'met' if ratio >= 2 else 'NOT met'}")
    kv_ours, kv_sync = samples.get(("kv-put", "jetcore")), samples.get(("kv-put", "nats-sync"))
    if kv_ours and kv_sync:
        ratio = median([r["put_per_s"] for r in kv_ours]) / median([r["put_per_s"] for r in kv_sync])
        lines.append(f"- KV put rate {ratio:.2f}× sync-always (target ≥ 2): {'met' if ratio >= 2 else 'NOT met'}")
    lines += floor_lines(samples, get)
    return lines


def floor_lines(samples: dict, get) -> list[str]:
    """The targets against the durable echo, the whole path's floor in the same run: what
    the floor itself reaches of each target, and jetcore as a fraction of the floor."""
    echo, ours, sync = ECHO_KEY, ("js-pub-sync", "jetcore"), ("js-pub-sync", "nats-sync")
    if None in (get(echo, "rate"), get(sync, "rate"), get(ours, "rate")):
        return []
    lines = ["", "Against the floor (the durable echo, no server; `disk-floor`'s `echo-` rows):", "",
             f"- the floor's own rate is {get(echo, 'rate') / get(sync, 'rate'):.2f}× sync-always's and its p99 "
             f"{get(echo, 'p99') / get(sync, 'p99'):.2f}× sync-always's (the targets ask 2× and 0.5×)",
             f"- jetcore: rate {get(ours, 'rate') / get(echo, 'rate'):.2f}× the floor's, p50 "
             f"{get(ours, 'p50') / get(echo, 'p50'):.2f}×, p99 {get(ours, 'p99') / get(echo, 'p99'):.2f}×"]
    kv_ours = samples.get(("kv-put", "jetcore"))
    if kv_ours:
        lines.append(f"- KV put: {median([r['put_per_s'] for r in kv_ours]) / get(echo, 'rate'):.2f}× the floor's rate")
    return lines + client_floor_lines(samples, get)


def client_floor_lines(samples: dict, get) -> list[str]:
    """The targets against the durable stand-in: the floor with each benchmark's own client
    (jetbench for JS publish, async-nats for KV put)."""
    standin, ours, sync = ("js-pub-sync", "standin"), ("js-pub-sync", "jetcore"), ("js-pub-sync", "nats-sync")
    if None in (get(standin, "rate"), get(sync, "rate"), get(ours, "rate")):
        return []
    lines = ["", "Against each client's floor (the durable stand-in: the echo's thread speaking NATS):", "",
             f"- jetbench js-pub-sync: the stand-in reaches {get(standin, 'rate') / get(sync, 'rate'):.2f}× "
             f"sync-always's rate and {get(standin, 'p99') / get(sync, 'p99'):.2f}× its p99; jetcore is at "
             f"{get(ours, 'rate') / get(standin, 'rate'):.2f}× the stand-in's rate, p50 "
             f"{get(ours, 'p50') - get(standin, 'p50'):+,.0f} µs, p99 {get(ours, 'p99') - get(standin, 'p99'):+,.0f} µs"]
    kv = {server: samples.get(("kv-put", server)) for server in ("standin", "jetcore", "nats-sync")}
    if all(kv.values()):
        rate = {server: median([r["put_per_s"] for r in runs]) for server, runs in kv.items()}
        lines.append(f"- async-nats KV put: the stand-in reaches {rate['standin'] / rate['nats-sync']:.2f}× "
                     f"sync-always's rate; jetcore is at {rate['jetcore'] / rate['standin']:.2f}× the stand-in's")
    return lines


def draw(samples: dict, path: pathlib.Path, title: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from jetperf.plots import COLORS, MAX_NINES, nines
    except ImportError:
        print("latency: no matplotlib; no plot", file=sys.stderr)
        return False
    series = [(FLOOR_KEY, "disk: 4 KiB write made durable, fastest way", "#2ca02c", "--"),
              (ECHO_KEY, "durable echo over loopback (no server), fastest way", "#17becf", "--"),
              (("req", "nats"), "request-reply (nats-server)", "#7f7f7f", ":"),
              (("js-pub-sync", "nats"), "JS publish, nats-server", COLORS["nats"], "-"),
              (("js-pub-sync", "nats-sync"), "JS publish, nats-server sync always", COLORS["nats-sync"], "-"),
              (("js-pub-sync", "jetcore"), "JS publish, jetcore", COLORS["jetcore"], "-")]
    series.append((("js-pub-sync", "standin"), "JS publish, durable stand-in (no server)", "#bcbd22", "--"))
    series += [(key, f"JS publish, {key[1]}", "#c44e52", "-.") for key in samples
               if key[0] == "js-pub-sync" and key[1] not in ("nats", "nats-sync", "jetcore", "standin")]
    figure, axis = plt.subplots(figsize=(7.5, 4.5))
    for key, label, color, style in series:
        runs = [report for report in samples.get(key, []) if report.get("latency")]
        if not runs:
            continue
        report = sorted(runs, key=lambda report: report["latency"]["p99_us"])[(len(runs) - 1) // 2]
        curve = [point for point in report["latency"]["curve"] if point["quantile"] > 0]
        axis.plot([nines(point["quantile"]) for point in curve], [point["latency_us"] for point in curve],
                  marker="o", markersize=3, color=color, linestyle=style, label=label)
    axis.set_yscale("log")
    axis.set_xticks([nines(0.5), 1, 2, 3, 4, MAX_NINES + 0.5], ["p50", "p90", "p99", "p99.9", "p99.99", "max"])
    axis.set_ylabel("µs (log)")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=8)
    axis.set_title(f"{title}\none in flight; run with the median p99 (lower is better)", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def main() -> int:
    arguments = parse_arguments()
    info = machine.describe()
    started = time.monotonic()
    samples = measure(arguments)
    stem = f"{datetime.date.today().isoformat()}-latency-{info['commit']}"
    output = pathlib.Path(arguments.output) / stem
    output.mkdir(parents=True, exist_ok=True)
    plot = f"{stem}.png" if draw(samples, output / f"{stem}.png", stem) else None
    markdown = render(samples, info, arguments, plot)
    markdown += f"\nElapsed {time.monotonic() - started:.0f} s.\n"
    (output / f"{stem}.md").write_text(markdown)
    raw = {"machine": info, "samples": {f"{kind} {server}": runs for (kind, server), runs in samples.items()}}
    (output / f"{stem}.json").write_text(json.dumps(raw, indent=1))
    print(markdown)
    print(f"latency: wrote {output / (stem + '.md')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
