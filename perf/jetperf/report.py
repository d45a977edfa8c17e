"""The Markdown result file: ratio table, independent clients, every run, the setup."""

from __future__ import annotations

from .runner import Results, median_of, p99
from .scenarios import Scenario
from .servers import ServerSpec

MISSING = "—"


def rate_text(value: float | None) -> str:
    if value is None:
        return MISSING
    if value >= 1e6:
        return f"{value / 1e6:.2f} M/s"
    if value >= 1e3:
        return f"{value / 1e3:.1f} k/s"
    return f"{value:.0f} /s"


def micros_text(value: float | None) -> str:
    if value is None:
        return MISSING
    return f"{value / 1000:.2f} ms" if value >= 1000 else f"{value:.0f} µs"


def ratio(jetcore: float | None, theirs: float | None) -> float | None:
    if jetcore is None or theirs is None or theirs == 0:
        return None
    return jetcore / theirs


def bytes_per_object(report: dict) -> float | None:
    memory = report.get("memory")
    return memory["bytes_per_object"] if memory else None


METRIC_PICKERS = {"rate": lambda report: report["msgs_per_s"], "p99": p99, "memory": bytes_per_object}
METRIC_LABELS = {"rate": "msgs/s", "p99": "p99", "memory": "bytes/consumer"}


def bytes_text(value: float | None) -> str:
    return MISSING if value is None else f"{value:,.0f} B"


METRIC_FORMATS = {"rate": rate_text, "p99": micros_text, "memory": bytes_text}


def metric_value(results: Results, server: str, scenario: str, metric: str) -> float | None:
    reports = results.runs.get(server, {}).get(scenario, [])
    return median_of(reports, METRIC_PICKERS[metric])


def ratio_table(results: Results, servers: list[ServerSpec], scenarios: list[Scenario]) -> list[str]:
    keys = [spec.key for spec in servers]
    like = {spec.key: spec.scenario_key for spec in servers}
    others = [key for key in keys if key != "jetcore"]
    header = ["scenario", "metric", *[spec.label for spec in servers],
              *[f"jetcore / {key}" for key in others], "target (issues 3-5)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for scenario in scenarios:
        metrics = scenario.metrics
        for metric in metrics:
            values = {key: metric_value(results, key, scenario.key, metric) for key in keys}
            shown = [METRIC_FORMATS[metric](values[key]) if like[key] in scenario.servers else "n/a" for key in keys]
            ratios = []
            for key in others:
                value = ratio(values.get("jetcore"), values[key]) if like[key] in scenario.servers else None
                ratios.append(f"{value:.2f}×" if value is not None else MISSING)
            targets = [target_text(target, values) for target in scenario.targets if target.kind == metric]
            label = scenario.label if metric == metrics[0] else ""
            metric_label = METRIC_LABELS[metric]
            lines.append("| " + " | ".join([label, metric_label, *shown, *ratios, "; ".join(targets) or ""]) + " |")
    return lines


def target_text(target, values: dict) -> str:
    if target.versus is None:
        value = values.get("jetcore")
        if value is None:
            return f"{target.describe()}: not measured"
        return f"{target.describe()}: {value:,.0f} B {'met' if target.met(value) else 'NOT met'}"
    value = ratio(values.get("jetcore"), values.get(target.versus))
    if value is None:
        return f"{target.describe()}: not measured"
    return f"{target.describe()}: {value:.2f}× {'met' if target.met(value) else 'NOT met'}"


def clients_table(results: Results, servers: list[ServerSpec], ceiling: dict, clients: list[str]) -> list[str]:
    shown = [spec for spec in servers if not spec.sync_always]
    header = ["client (core publish 128 B)", *[spec.label for spec in shown], "null server (client ceiling)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for client in clients:
        cells = []
        for spec in shown:
            samples = results.clients.get(spec.key, {}).get(client, [])
            cells.append(rate_text(sorted(samples)[(len(samples) - 1) // 2]) if samples else MISSING)
        lines.append("| " + " | ".join([client, *cells, rate_text(ceiling.get(client))]) + " |")
    return lines


def all_runs(results: Results, scenarios: list[Scenario]) -> list[str]:
    lines = ["| server | scenario | rate per run | p99 or bytes/consumer per run | warnings |", "|---|---|---|---|---|"]
    for server, by_scenario in results.runs.items():
        for scenario in scenarios:
            reports = by_scenario.get(scenario.key, [])
            if not reports:
                continue
            rates = ", ".join(rate_text(report["msgs_per_s"]) for report in reports)
            if reports[0].get("latency"):
                p99s = ", ".join(micros_text(p99(report)) for report in reports)
            elif reports[0].get("memory"):
                p99s = ", ".join(bytes_text(bytes_per_object(report)) for report in reports)
            else:
                p99s = ""
            warnings = "; ".join(sorted({error for report in reports for error in report.get("errors", [])}))
            lines.append(f"| {server} | {scenario.key} | {rates} | {p99s} | {warnings} |")
    return lines


def render(*, title: str, machine: dict, settings, servers: list[ServerSpec], versions: dict,
           scenarios: list[Scenario], results: Results, ceiling: dict, clients: list[str],
           plots: dict[str, str], elapsed_s: float) -> str:
    pinning = (f"servers on CPU {settings.server_cpus}, clients on CPU {settings.client_cpus} (taskset)"
               if settings.server_cpus else "no pinning (single CPU)")
    lines = [
        f"# {title}",
        "",
        f"Commit `{machine['commit']}`{' (uncommitted changes)' if machine['dirty'] else ''}; "
        f"{machine['nproc']} CPUs ({machine['cpu']}), {machine['memory_gib']} GiB, kernel {machine['kernel']}; "
        f"load average at start {', '.join(f'{load:.2f}' for load in machine['load_average'])}.",
        f"Method: same machine, same client (jetbench), servers alternated round by round, each started "
        f"fresh with an empty store; median of {results.rounds_completed} runs of {settings.seconds:g} s "
        f"(consume scenarios: {settings.messages:,} prefilled messages); {pinning}. "
        f"Whole comparison took {elapsed_s / 60:.1f} min.",
        "",
        "Servers: " + "; ".join(f"{spec.label}: `{versions.get(spec.key, '?')}`" for spec in servers) + ".",
        "",
    ]
    if results.budget_note:
        lines += [f"**Note**: {results.budget_note}.", ""]
    for key, reason in results.skipped.items():
        first, *rest = reason.splitlines()
        lines += [f"**{key} skipped**: {first}", ""]
        if rest:
            lines += ["```", *rest, "```", ""]
    lines += ["## Ratios", "", *ratio_table(results, servers, scenarios), ""]
    for name, path in plots.items():
        lines += [f"![{name}]({path})", ""]
    lines += ["## Independent clients", "",
              "Core publish through jetbench, async-nats 0.51 (tokio) and nats-py, so no figure rests on "
              "jetbench alone. The last column is each client against a null server that discards "
              "everything: the client's own ceiling.", "",
              *clients_table(results, servers, ceiling, clients), ""]
    lines += ["## All runs", "", *all_runs(results, scenarios), ""]
    if results.failures:
        lines += ["## Failures", "", *[f"- {failure}" for failure in results.failures], ""]
    return "\n".join(lines)
