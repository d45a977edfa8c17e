"""The scenarios perf/compare runs, with the targets the issues set for jetcore.

A target compares jetcore's median with one nats-server configuration's median:
  kind "rate": jetcore msgs/s >= factor x theirs;   kind "p99": jetcore p99 <= factor x theirs.
"""

from __future__ import annotations

import dataclasses

from .servers import JETCORE, NATS, NATS_SYNC

CONSUME_MESSAGES = 300_000  # prefilled messages for the consume scenarios
IDLE_CONSUMERS = 10_000  # issue 5 measures memory per idle durable consumer over 10 000


@dataclasses.dataclass(frozen=True)
class Target:
    kind: str  # "rate", "p99" (relative to `versus`) or "memory" (absolute bytes)
    factor: float
    versus: str | None  # server key; None for an absolute target

    def describe(self) -> str:
        if self.kind == "memory":
            return f"≤ {self.factor:g} bytes per consumer"
        if self.kind == "rate":
            return f"rate ≥ {self.factor:g}× {self.versus}"
        return f"p99 ≤ {self.factor:g}× {self.versus}"

    def met(self, value: float) -> bool:
        """`value` is jetcore's ratio to `versus`, or its absolute value for "memory"."""
        return value >= self.factor if self.kind == "rate" else value <= self.factor


@dataclasses.dataclass(frozen=True)
class Scenario:
    key: str
    label: str
    arguments: tuple[str, ...]  # jetbench arguments; "{seconds}" and "{messages}" expand
    servers: tuple[str, ...]
    targets: tuple[Target, ...] = ()
    latency: bool = False  # show its latency curve
    fixed_rate: bool = False  # paced: its msgs/s is the schedule, not a result
    memory: bool = False  # reports server memory per object; needs a server of its own

    @property
    def metrics(self) -> list[str]:
        if self.memory:
            return ["memory"]
        if self.fixed_rate:
            return ["p99"]
        return ["rate", "p99"] if self.latency else ["rate"]

    def jetbench_arguments(self, seconds: float, messages: int, pid: int) -> list[str]:
        return [argument.format(seconds=f"{seconds}s", messages=messages, pid=pid) for argument in self.arguments]


CORE = (NATS.key, JETCORE.key)
DURABLE = (NATS.key, NATS_SYNC.key, JETCORE.key)

SCENARIOS = (
    Scenario("pub", "core publish 128 B", ("pub", "--duration", "{seconds}"), CORE,
             (Target("rate", 1.5, NATS.key),)),
    Scenario("pubsub", "pub/sub 1:1 128 B", ("pubsub", "--duration", "{seconds}"), CORE,
             (Target("rate", 1.5, NATS.key),)),
    Scenario("fanout4", "fan-out 1:4 128 B", ("pubsub", "--subscribers", "4", "--duration", "{seconds}"),
             CORE, (Target("rate", 1.5, NATS.key),)),
    Scenario("req", "request-reply 128 B", ("req", "--duration", "{seconds}"), CORE,
             (Target("p99", 1.0, NATS.key),), latency=True),
    Scenario("js-pub", "JS async publish 128 B, file", ("js-pub", "--duration", "{seconds}"), DURABLE,
             (Target("rate", 1.5, NATS.key), Target("rate", 30, NATS_SYNC.key))),
    Scenario("js-pub-1k", "JS async publish 1 KiB, file",
             ("js-pub", "--size", "1024", "--duration", "{seconds}"), DURABLE,
             (Target("rate", 1.5, NATS.key), Target("rate", 30, NATS_SYNC.key))),
    # Issue 21's targets; perf/latency measures the same with the disk's floor beside it.
    Scenario("js-pub-sync", "JS publish, 1 in flight", ("js-pub-sync", "--duration", "{seconds}"), DURABLE,
             (Target("p99", 0.5, NATS_SYNC.key), Target("rate", 2.0, NATS_SYNC.key)), latency=True),
    Scenario("js-pull", "pull consume, ack none", ("js-pull", "--msgs", "{messages}"), CORE,
             (Target("rate", 2.0, NATS.key),)),
    Scenario("js-pull-ack", "pull consume, explicit ack",
             ("js-pull", "--ack", "explicit", "--msgs", "{messages}"), CORE,
             (Target("rate", 1.5, NATS.key),)),
    Scenario("js-push", "push consume, ack none", ("js-push", "--msgs", "{messages}"), CORE),
    Scenario("latency-core", "core pub->sub latency, 10k msgs/s",
             ("latency", "--via", "core", "--rate", "10000", "--duration", "{seconds}"), CORE,
             latency=True, fixed_rate=True),
    Scenario("latency-stream", "stream pub->push latency, 10k msgs/s",
             ("latency", "--via", "stream", "--rate", "10000", "--duration", "{seconds}"), CORE,
             (Target("p99", 0.5, NATS.key),), latency=True, fixed_rate=True),
    Scenario("js-consumers", f"{IDLE_CONSUMERS:,} idle durable consumers, server RSS",
             ("js-consumers", "--consumers", str(IDLE_CONSUMERS), "--server-pid", "{pid}"), CORE,
             (Target("memory", 4096, None),), memory=True),
)

BY_KEY = {scenario.key: scenario for scenario in SCENARIOS}
