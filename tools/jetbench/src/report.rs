//! Results: the JSON document (`--json FILE`) and the human summary on stdout.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::cli::{LatencyPath, Options, Scenario};
use crate::error::{BenchError, Result};
use crate::latency::LatencySummary;
use crate::scenario::{Headline, MemoryGrowth, Outcome};

/// Version of the JSON layout; bump it when a field changes meaning.
const REPORT_FORMAT_VERSION: u32 = 1;
const BYTES_PER_MEGABYTE: f64 = 1_000_000.0;
const BYTES_PER_MEBIBYTE: f64 = 1024.0 * 1024.0;

#[derive(Debug, Serialize)]
pub struct Report {
    pub format_version: u32,
    pub tool: &'static str,
    pub tool_version: &'static str,
    pub scenario: &'static str,
    pub started_unix_s: u64,
    pub options: Options,
    pub elapsed_s: f64,
    pub messages_published: u64,
    pub messages_received: u64,
    pub messages_acknowledged: u64,
    /// Which count `msgs_per_s` is based on.
    pub headline: Headline,
    pub msgs_per_s: f64,
    /// Payload bytes per second of the headline count.
    pub payload_mb_per_s: f64,
    pub latency: Option<LatencySummary>,
    /// Server memory growth, for `js-consumers --server-pid`.
    pub memory: Option<MemoryGrowth>,
    pub errors: Vec<String>,
}

impl Report {
    pub fn new(scenario: Scenario, options: Options, outcome: &Outcome, started: SystemTime) -> Self {
        let seconds = outcome.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
        let msgs_per_s = outcome.headline_count() as f64 / seconds;
        let payload_mb_per_s = msgs_per_s * options.size as f64 / BYTES_PER_MEGABYTE;
        Self {
            format_version: REPORT_FORMAT_VERSION,
            tool: "jetbench",
            tool_version: env!("CARGO_PKG_VERSION"),
            scenario: scenario.name(),
            started_unix_s: started.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
            options,
            elapsed_s: outcome.elapsed.as_secs_f64(),
            messages_published: outcome.published,
            messages_received: outcome.received,
            messages_acknowledged: outcome.acknowledged,
            headline: outcome.headline,
            msgs_per_s,
            payload_mb_per_s,
            latency: outcome.latency.as_ref().and_then(|recorder| recorder.summary()),
            memory: outcome.memory.clone(),
            errors: outcome.errors.clone(),
        }
    }

    pub fn write_json(&self, path: &std::path::Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("a report always serializes");
        std::fs::write(path, text + "\n")
            .map_err(|source| BenchError::Output { path: path.display().to_string(), source })
    }

    /// A few lines a person reads.
    pub fn summary(&self) -> String {
        let options = &self.options;
        let mut text = String::new();
        let _ = writeln!(text, "jetbench {}  {}  {}", self.scenario, options.url, self.settings_text());
        let _ = writeln!(
            text,
            "  {:.2} s  published {}  received {}  acknowledged {}",
            self.elapsed_s, self.messages_published, self.messages_received, self.messages_acknowledged
        );
        let rate = group_thousands(self.msgs_per_s);
        let _ = match self.headline {
            Headline::Created => writeln!(text, "  {rate} consumers created/s"),
            headline => writeln!(text, "  {rate} msgs/s ({headline:?})  {:.1} MB/s payload", self.payload_mb_per_s),
        };
        if let Some(latency) = &self.latency {
            let _ = writeln!(
                text,
                "  latency us: p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}  \
                 ({} samples)",
                latency.p50_us, latency.p90_us, latency.p99_us, latency.p999_us, latency.max_us, latency.count
            );
        }
        if let Some(memory) = &self.memory {
            let _ = writeln!(
                text,
                "  server RSS {:.1} -> {:.1} MiB: {:.0} bytes per consumer",
                memory.rss_before_bytes as f64 / BYTES_PER_MEBIBYTE,
                memory.rss_after_bytes as f64 / BYTES_PER_MEBIBYTE,
                memory.bytes_per_object
            );
        }
        for error in &self.errors {
            let _ = writeln!(text, "  WARNING: {error}");
        }
        text
    }
}

impl Report {
    /// The options that matter for this scenario, e.g. `size=128B publishers=1 window=256`.
    fn settings_text(&self) -> String {
        let options = &self.options;
        let mut parts = vec![format!("size={}B", options.size)];
        let scenario = self.scenario;
        let publishes = !matches!(scenario, "js-pull" | "js-push" | "js-consumers");
        let stream = scenario.starts_with("js-") || options.via == LatencyPath::Stream;
        if publishes {
            parts.push(format!("publishers={}", options.publishers));
        }
        if matches!(scenario, "pubsub" | "req" | "js-pull" | "js-push") {
            parts.push(format!("subscribers={}", options.subscribers));
        }
        if scenario == "js-pub" {
            parts.push(format!("window={} streams={}", options.window, options.streams));
        }
        if stream {
            parts.push(format!("storage={:?}", options.storage).to_lowercase());
        }
        if options.msg_id && scenario.starts_with("js-pub") {
            parts.push("msg-id".into());
        }
        if matches!(scenario, "js-pull" | "js-push") {
            parts.push(format!("ack={:?}", options.ack).to_lowercase());
        }
        if scenario == "js-consumers" {
            parts.push(format!("consumers={}", options.consumers));
        }
        if scenario == "js-pull" {
            parts.push(format!("batch={}", options.batch));
        }
        if scenario == "latency" {
            parts.push(format!("via={:?}", options.via).to_lowercase());
        }
        if let Some(rate) = options.rate {
            parts.push(format!("rate={rate}/s"));
        }
        parts.join(" ")
    }
}

/// `1234567.8` as `1,234,568`.
fn group_thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_are_grouped() {
        assert_eq!(super::group_thousands(1234567.8), "1,234,568");
        assert_eq!(super::group_thousands(999.0), "999");
    }
}
