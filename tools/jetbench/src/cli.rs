//! Command line: one subcommand per scenario, options shared by all of them.

use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use crate::limits::{DEFAULT_CONSUMER_COUNT, DEFAULT_MAX_ACK_PENDING, DEFAULT_PUBLISH_WINDOW, DEFAULT_PULL_BATCH};

#[derive(Debug, Parser)]
#[command(name = "jetbench", version, about = "NATS / JetStream load generator")]
pub struct Cli {
    #[command(subcommand)]
    pub scenario: Scenario,
    #[command(flatten)]
    pub options: Options,
}

/// The workloads jetbench can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Subcommand)]
pub enum Scenario {
    /// Core publish, no subscribers: publishers' messages/s.
    Pub,
    /// Core publish with 1:N fan-out: every subscriber gets every message.
    Pubsub,
    /// Request-reply against built-in responders (a queue group of `--subscribers`).
    Req,
    /// JetStream publish with up to `--window` unacknowledged publishes per publisher.
    JsPub,
    /// JetStream publish with one publish in flight (each waits for its ack).
    JsPubSync,
    /// Pull consume from a pre-filled stream through a durable pull consumer.
    JsPull,
    /// Push consume from a pre-filled stream through a durable push consumer.
    JsPush,
    /// End-to-end publish→consume latency at a fixed rate (`--via core|stream`).
    Latency,
    /// Creates `--consumers` idle durable consumers; with `--server-pid`, reports the
    /// server's resident memory growth per consumer.
    JsConsumers,
}

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Self::Pub => "pub",
            Self::Pubsub => "pubsub",
            Self::Req => "req",
            Self::JsPub => "js-pub",
            Self::JsPubSync => "js-pub-sync",
            Self::JsPull => "js-pull",
            Self::JsPush => "js-push",
            Self::Latency => "latency",
            Self::JsConsumers => "js-consumers",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Storage {
    File,
    Memory,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AckPolicy {
    None,
    Explicit,
}

/// What the `latency` scenario measures through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LatencyPath {
    /// Core publish to a plain subscriber.
    Core,
    /// Publish into a stream, delivered by a push consumer (ack none).
    Stream,
    /// No server: a relay thread in jetbench forwards the bytes (the machine's floor).
    Loopback,
}

#[derive(Debug, Clone, clap::Args, serde::Serialize)]
pub struct Options {
    /// Server to benchmark.
    #[arg(long, global = true, default_value = "nats://127.0.0.1:4222")]
    pub url: String,
    /// `pubsub` subscribers connect here instead of `--url` (e.g. a leaf node of the
    /// publishers' server); the run then waits for their interest to cross.
    #[arg(long, global = true)]
    pub sub_url: Option<String>,
    /// Payload size in bytes.
    #[arg(long, global = true, default_value_t = 128)]
    pub size: usize,
    /// Total messages (split across publishers). Default 1000000 unless --duration is given.
    #[arg(long, global = true)]
    pub msgs: Option<u64>,
    /// Run for this long instead of a count (e.g. 5s, 500ms, 1m).
    #[arg(long, global = true, value_parser = parse_duration)]
    #[serde(serialize_with = "serialize_seconds")]
    pub duration: Option<Duration>,
    /// Publisher (or requester) connections.
    #[arg(long, global = true, default_value_t = 1)]
    pub publishers: usize,
    /// Subscriber (or responder, or consumer) connections.
    #[arg(long, global = true, default_value_t = 1)]
    pub subscribers: usize,
    /// Streams to spread JetStream publishers over.
    #[arg(long, global = true, default_value_t = 1)]
    pub streams: usize,
    /// Fixed total rate in messages/s; latencies are then measured from each message's
    /// intended send time (corrected for coordinated omission).
    #[arg(long, global = true)]
    pub rate: Option<u64>,
    /// JetStream async publish window per publisher.
    #[arg(long, global = true, default_value_t = DEFAULT_PUBLISH_WINDOW)]
    pub window: usize,
    /// Give each JetStream publish a unique `Nats-Msg-Id` header (sent as HPUB), so the
    /// server's duplicate tracking is part of what is measured.
    #[arg(long, global = true)]
    pub msg_id: bool,
    /// Stream storage.
    #[arg(long, global = true, value_enum, default_value_t = Storage::File)]
    pub storage: Storage,
    /// Consumer ack policy.
    #[arg(long, global = true, value_enum, default_value_t = AckPolicy::None)]
    pub ack: AckPolicy,
    /// Pull request batch size.
    #[arg(long, global = true, default_value_t = DEFAULT_PULL_BATCH)]
    pub batch: usize,
    /// Consumers' max_ack_pending.
    #[arg(long, global = true, default_value_t = DEFAULT_MAX_ACK_PENDING)]
    pub max_ack_pending: i64,
    /// Durable consumers the `js-consumers` scenario creates.
    #[arg(long, global = true, default_value_t = DEFAULT_CONSUMER_COUNT)]
    pub consumers: u64,
    /// Process id of the server (same machine), to read its resident memory.
    #[arg(long, global = true)]
    pub server_pid: Option<u32>,
    /// Path of the `latency` scenario.
    #[arg(long, global = true, value_enum, default_value_t = LatencyPath::Core)]
    pub via: LatencyPath,
    /// Subject prefix.
    #[arg(long, global = true, default_value = "jetbench")]
    pub subject: String,
    /// Stream name prefix.
    #[arg(long, global = true, default_value = "JETBENCH")]
    pub stream: String,
    /// Pin client threads to these CPUs, round robin (e.g. `1`, `0,2`, `2-3`).
    #[arg(long, global = true, value_parser = parse_cpu_list)]
    pub cpus: Option<CpuList>,
    /// Write results as JSON to this file.
    #[arg(long, global = true)]
    pub json: Option<std::path::PathBuf>,
    /// No progress line on stderr.
    #[arg(long, global = true)]
    pub quiet: bool,
    /// Leave the streams `js-pub` wrote in place (e.g. for a mirror still copying them).
    #[arg(long, global = true)]
    pub keep_streams: bool,
}

/// CPUs to pin client threads to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CpuList(pub Vec<usize>);

fn serialize_seconds<S: serde::Serializer>(value: &Option<Duration>, out: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(duration) => out.serialize_some(&duration.as_secs_f64()),
        None => out.serialize_none(),
    }
}

/// Parses `5s`, `250ms`, `2m`, `100us` or plain seconds (`1.5`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("not a duration: {text:?}"))?;
    let seconds_per_unit = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" => 60.0,
        _ => return Err(format!("unknown duration unit {unit:?} in {text:?}")),
    };
    Ok(Duration::from_secs_f64(value * seconds_per_unit))
}

/// Parses `0,2,4-5`.
pub fn parse_cpu_list(text: &str) -> Result<CpuList, String> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|part| !part.is_empty()) {
        let bad = || format!("not a cpu list: {text:?}");
        match part.split_once('-') {
            Some((first, last)) => {
                let first: usize = first.parse().map_err(|_| bad())?;
                let last: usize = last.parse().map_err(|_| bad())?;
                cpus.extend(first..=last);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    if cpus.is_empty() {
        return Err(format!("empty cpu list: {text:?}"));
    }
    Ok(CpuList(cpus))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_cpu_lists_parse() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("3h").is_err());
        assert_eq!(parse_cpu_list("0,2-3").unwrap(), CpuList(vec![0, 2, 3]));
        assert!(parse_cpu_list("x").is_err());
    }
}
