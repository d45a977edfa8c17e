"""PNG plots a person reads at a glance: one throughput panel per scenario (each with its
own scale, since rates span four orders of magnitude) and latency percentile curves."""

from __future__ import annotations

import math
import pathlib
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (backend must be chosen first)
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from .runner import Results, median_of, median_report, p99  # noqa: E402
from .scenarios import Scenario  # noqa: E402
from .servers import ServerSpec  # noqa: E402

COLORS = {"nats": "#4c72b0", "nats-sync": "#9aa5b1", "jetcore": "#dd8452"}
PANEL_COLUMNS = 4
PANEL_SIZE_IN = (3.4, 2.9)
DPI = 110
LATENCY_COLUMNS = 2
MAX_NINES = 5  # the latency x axis runs to p99.999, then max


def compact_rate(value: float, _position=None) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.1f}M"
    if value >= 1e3:
        return f"{value / 1e3:.0f}k"
    return f"{value:.0f}"


def throughput(results: Results, servers: list[ServerSpec], scenarios: list[Scenario],
               path: pathlib.Path, title: str) -> None:
    scenarios = [scenario for scenario in scenarios if "rate" in scenario.metrics]
    rows = math.ceil(len(scenarios) / PANEL_COLUMNS)
    figure, axes = plt.subplots(rows, PANEL_COLUMNS, figsize=(PANEL_SIZE_IN[0] * PANEL_COLUMNS,
                                                             PANEL_SIZE_IN[1] * rows), squeeze=False)
    for axis, scenario in zip(axes.flat, scenarios):
        shown = [spec for spec in servers if spec.scenario_key in scenario.servers]
        samples = [[report["msgs_per_s"] for report in results.runs.get(spec.key, {}).get(scenario.key, [])]
                   for spec in shown]
        values = [median_of([{"r": sample} for sample in runs], lambda report: report["r"]) for runs in samples]
        positions = range(len(shown))
        heights = [value or 0 for value in values]
        # Whiskers span the fastest and slowest run: the spread behind each median.
        spread = [[height - min(runs, default=height) for height, runs in zip(heights, samples)],
                  [max(runs, default=height) - height for height, runs in zip(heights, samples)]]
        axis.bar(positions, heights, color=[COLORS.get(spec.key, "#777") for spec in shown],
                        yerr=spread, ecolor="#333", capsize=3, error_kw={"elinewidth": 0.8})
        # The median goes under each bar's name, clear of the whiskers.
        names = [f"{spec.key}\n{compact_rate(value) if value is not None else 'skipped'}"
                 for spec, value in zip(shown, values)]
        axis.set_xticks(list(positions), names, fontsize=8)
        axis.yaxis.set_major_formatter(FuncFormatter(compact_rate))
        axis.tick_params(axis="y", labelsize=7)
        tops = [height + above for height, above in zip(heights, spread[1])]
        axis.set_ylim(0, max(tops + [1]) * 1.2)
        axis.set_title("\n".join(textwrap.wrap(scenario.label, 30)) + ratio_caption(shown, values),
                       fontsize=9)
    for axis in list(axes.flat)[len(scenarios):]:
        axis.axis("off")
    figure.suptitle(f"{title}: messages/s, median; whiskers: slowest and fastest run (higher is better)",
                     fontsize=11)
    figure.tight_layout()
    figure.savefig(path, dpi=DPI)
    plt.close(figure)


def ratio_caption(shown: list[ServerSpec], values: list[float | None]) -> str:
    """'\njetcore 1.62× nats' when both were measured, else nothing."""
    by_key = {spec.key: value for spec, value in zip(shown, values)}
    jetcore, nats = by_key.get("jetcore"), by_key.get("nats")
    if not jetcore or not nats:
        return ""
    return f"\njetcore {jetcore / nats:.2f}× nats"


def nines(quantile: float) -> float:
    """x position of a quantile: 0.9 -> 1, 0.99 -> 2, ...; the max goes one step past p99.999."""
    if quantile >= 1.0:
        return MAX_NINES + 0.5
    return min(-math.log10(1.0 - quantile), MAX_NINES)


def latency(results: Results, servers: list[ServerSpec], scenarios: list[Scenario],
            path: pathlib.Path, title: str) -> bool:
    shown = [scenario for scenario in scenarios if scenario.latency]
    if not shown:
        return False
    columns = min(len(shown), LATENCY_COLUMNS)
    rows = math.ceil(len(shown) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 3.8 * rows), squeeze=False)
    ticks = [nines(0.5), 1, 2, 3, 4, MAX_NINES + 0.5]
    labels = ["p50", "p90", "p99", "p99.9", "p99.99", "max"]
    for axis, scenario in zip(axes.flat, shown):
        for spec in servers:
            # The run whose p99 is the median: its curve agrees with the table's p99.
            report = median_report(results.runs.get(spec.key, {}).get(scenario.key, []), key=p99)
            if not report or not report.get("latency"):
                continue
            curve = [point for point in report["latency"]["curve"] if point["quantile"] > 0]
            axis.plot([nines(point["quantile"]) for point in curve], [point["latency_us"] for point in curve],
                      marker="o", markersize=3, color=COLORS.get(spec.key, "#777"), label=spec.key)
        axis.set_yscale("log")
        axis.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axis.yaxis.set_minor_formatter(NullFormatter())
        axis.set_xticks(ticks, labels, fontsize=8)
        axis.set_xlim(0.1, MAX_NINES + 0.7)
        axis.set_ylabel("µs (log)", fontsize=8)
        axis.set_title("\n".join(textwrap.wrap(scenario.label, 36)), fontsize=9)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    for axis in list(axes.flat)[len(shown):]:
        axis.axis("off")
    figure.suptitle(f"{title}: latency by percentile, run with the median p99 (lower is better)", fontsize=11)
    figure.tight_layout()
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return True
