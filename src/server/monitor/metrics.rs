//! `/metrics` in Prometheus text format (version 0.0.4): per-shard publish, delivery and
//! store counters, the store latency histogram (append through group commit and
//! fdatasync, as a publisher waits for it), group commit's own histograms (write time,
//! fdatasync time, records and bytes per group; per shard and storage kind),
//! connections, subscriptions, cross-shard ring fill and overflow, per-stream messages
//! and bytes, and per-consumer pending and redelivered. Then nats-server's `/varz`,
//! `/subsz` and `/connz` numbers under prometheus-nats-exporter's names (`gnatsd_varz_*`…).

use std::fmt::Write;

use hdrhistogram::Histogram;

use super::snapshot::{ShardSnapshot, SnapshotQuery};
use super::Monitor;
use crate::jetstream::service::{FlushCounts, Pow2Counts};

/// Upper bounds of the latency buckets, in microseconds.
const LATENCY_BUCKETS_MICROS: [u64; 14] =
    [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000, 10_000_000];

pub fn render(monitor: &Monitor) -> Option<String> {
    let query = SnapshotQuery { jetstream: true, consumers: true, ..SnapshotQuery::default() };
    let snapshots = monitor.gather(query)?;
    let mut out = String::new();
    per_shard_counters(&mut out, &snapshots);
    store_latency(&mut out, &snapshots);
    group_commit(&mut out, &snapshots);
    mesh(&mut out, &snapshots);
    streams(&mut out, &snapshots);
    consumers(&mut out, &snapshots);
    nats_exporter(&mut out, monitor, &snapshots);
    Some(out)
}

/// nats-server's figures named as prometheus-nats-exporter names them, so dashboards
/// built on the exporter work against jetcore's `/metrics`: every top-level number of
/// `/varz`, `/subsz` and `/connz` as the gauge `gnatsd_<endpoint>_<field>{server_id}`,
/// and `server_name` and `version` as `gnatsd_varz_<field>{server_id,value} 1` (the
/// exporter reads all of them as gauges, counters included).
fn nats_exporter(out: &mut String, monitor: &Monitor, snapshots: &[ShardSnapshot]) {
    let server_id = monitor.identity.server_id.as_str();
    let plain = super::http::Request::parse("GET / HTTP/1.1");
    let subsz = super::subsz::render(monitor, &plain).and_then(|text| serde_json::from_str(&text).ok());
    // `/connz`'s top-level numbers for its default page, without listing connections.
    let total: usize = snapshots.iter().map(|snapshot| snapshot.connection_count).sum();
    let limit = crate::limits::MONITOR_PAGE_DEFAULT;
    let connz = serde_json::json!({ "num_connections": total.min(limit), "total": total, "offset": 0, "limit": limit });
    let endpoints = [("varz", Some(super::varz::value(monitor))), ("subsz", subsz), ("connz", Some(connz))];
    for (endpoint, value) in endpoints {
        let Some(serde_json::Value::Object(fields)) = value else { continue };
        for (field, value) in &fields {
            let name = format!("gnatsd_{endpoint}_{field}");
            match value {
                serde_json::Value::Number(number) => {
                    header(out, &name, "gauge", field);
                    let _ = writeln!(out, "{name}{{server_id=\"{server_id}\"}} {number}");
                }
                serde_json::Value::String(text)
                    if endpoint == "varz" && matches!(field.as_str(), "server_name" | "version") =>
                {
                    header(out, &name, "gauge", field);
                    let _ = writeln!(out, "{name}{{server_id=\"{server_id}\",value=\"{}\"}} 1", label_escaped(text));
                }
                _ => {}
            }
        }
    }
}

/// A Prometheus label value: backslash, double quote and newline escaped.
fn label_escaped(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn per_shard_counters(out: &mut String, snapshots: &[ShardSnapshot]) {
    type Read = fn(&ShardSnapshot) -> u64;
    let series: [(&str, &str, &str, Read); 7] = [
        (
            "jetcore_client_publishes_total",
            "counter",
            "Messages published by clients on this shard's connections.",
            |s| s.stats.client_publishes,
        ),
        (
            "jetcore_client_publish_bytes_total",
            "counter",
            "Payload bytes published by clients on this shard's connections.",
            |s| s.stats.client_publish_bytes,
        ),
        (
            "jetcore_jetstream_deliveries_total",
            "counter",
            "Messages consumers on this shard delivered (redeliveries included).",
            |s| s.stats.jetstream_deliveries,
        ),
        ("jetcore_connections_accepted_total", "counter", "Client connections this shard accepted.", |s| {
            s.stats.connections_accepted
        }),
        ("jetcore_connections", "gauge", "Client connections open on this shard.", |s| s.connection_count as u64),
        ("jetcore_subscriptions", "gauge", "Client subscriptions on this shard.", |s| s.subscription_count as u64),
        (
            "jetcore_stores_failed_total",
            "counter",
            "Stores this shard's streams refused or failed (pub ack errors).",
            |s| s.stats.stores_failed,
        ),
    ];
    for (name, kind, help, read) in series {
        header(out, name, kind, help);
        for snapshot in snapshots {
            let _ = writeln!(out, "{name}{{shard=\"{}\"}} {}", snapshot.shard, read(snapshot));
        }
    }
    let help = "Publishes this shard's streams acknowledged as durable (Nats-Msg-Id duplicates included).";
    header(out, "jetcore_stores_total", "counter", help);
    for snapshot in snapshots {
        let _ = writeln!(out, "jetcore_stores_total{{shard=\"{}\"}} {}", snapshot.shard, snapshot.stats.stores_ok);
    }
}

fn store_latency(out: &mut String, snapshots: &[ShardSnapshot]) {
    let name = "jetcore_store_latency_seconds";
    let help = "From handing a message to its stream to its durable pub ack: append, group commit and fdatasync.";
    header(out, name, "histogram", help);
    for snapshot in snapshots {
        histogram(out, name, &format!("shard=\"{}\"", snapshot.shard), &snapshot.stats.store_latency_micros);
    }
}

/// Writes one Prometheus histogram (cumulative buckets, sum, count) from microseconds.
fn histogram(out: &mut String, name: &str, labels: &str, micros: &Histogram<u64>) {
    for bound in LATENCY_BUCKETS_MICROS {
        let count = if micros.is_empty() { 0 } else { micros.count_between(0, bound) };
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{}\"}} {count}", seconds(bound));
    }
    let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", micros.len());
    let sum_seconds = micros.mean() * micros.len() as f64 / 1e6;
    let _ = writeln!(out, "{name}_sum{{{labels}}} {sum_seconds}");
    let _ = writeln!(out, "{name}_count{{{labels}}} {}", micros.len());
}

fn seconds(micros: u64) -> String {
    format!("{}", micros as f64 / 1e6)
}

/// Group commit as the store sees it, per shard and storage kind.
fn group_commit(out: &mut String, snapshots: &[ShardSnapshot]) {
    type Read = fn(&FlushCounts) -> &Pow2Counts;
    let series: [(&str, &str, Unit, Read); 4] = [
        (
            "jetcore_store_append_seconds",
            "Time to write one group commit's records (one aligned write).",
            Unit::Nanoseconds,
            |c| &c.write_nanos,
        ),
        (
            "jetcore_store_fdatasync_seconds",
            "Time of one fdatasync round (every segment file written since the last one).",
            Unit::Nanoseconds,
            |c| &c.sync_nanos,
        ),
        (
            "jetcore_store_group_commit_records",
            "Records written per group commit (messages, tombstones and purge records).",
            Unit::Count,
            |c| &c.group_records,
        ),
        (
            "jetcore_store_group_commit_bytes",
            "Bytes written per group commit, padding to the block included.",
            Unit::Count,
            |c| &c.group_bytes,
        ),
    ];
    for (name, help, unit, read) in series {
        header(out, name, "histogram", help);
        for snapshot in snapshots {
            for (storage, counts) in [("file", &snapshot.stats.flush_file), ("memory", &snapshot.stats.flush_memory)] {
                let labels = format!("shard=\"{}\",storage=\"{storage}\"", snapshot.shard);
                pow2_histogram(out, name, &labels, read(counts), unit);
            }
        }
    }
    let name = "jetcore_store_blocking_writes_total";
    header(out, name, "counter", "Groups made durable by one blocking write on an idle shard's thread.");
    for snapshot in snapshots {
        let labels = format!("shard=\"{}\",storage=\"file\"", snapshot.shard);
        let _ = writeln!(out, "{name}{{{labels}}} {}", snapshot.stats.flush_file.blocking_writes);
    }
    let name = "jetcore_client_blocking_reads_total";
    header(out, name, "counter", "Client reads made by a blocking wait on a shard with nothing else to serve.");
    for snapshot in snapshots {
        let _ = writeln!(out, "{name}{{shard=\"{}\"}} {}", snapshot.shard, snapshot.stats.blocking_reads);
    }
}

#[derive(Clone, Copy)]
enum Unit {
    /// Recorded in nanoseconds, shown in seconds.
    Nanoseconds,
    Count,
}

impl Unit {
    fn show(self, value: u64) -> String {
        match self {
            Unit::Count => value.to_string(),
            Unit::Nanoseconds => {
                let fraction = format!("{:09}", value % 1_000_000_000);
                let fraction = fraction.trim_end_matches('0');
                match fraction.is_empty() {
                    true => format!("{}", value / 1_000_000_000),
                    false => format!("{}.{fraction}", value / 1_000_000_000),
                }
            }
        }
    }
}

/// Writes one Prometheus histogram from power-of-two bucket counts.
fn pow2_histogram(out: &mut String, name: &str, labels: &str, counts: &Pow2Counts, unit: Unit) {
    let mut cumulative = 0;
    for (index, count) in counts.buckets.iter().enumerate() {
        cumulative += count;
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{}\"}} {cumulative}", unit.show(counts.bound(index)));
    }
    let total = counts.count();
    let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {total}");
    let _ = writeln!(out, "{name}_sum{{{labels}}} {}", unit.show(counts.sum));
    let _ = writeln!(out, "{name}_count{{{labels}}} {total}");
}

/// The cross-shard rings' fill level and the backlog queued beyond full rings.
fn mesh(out: &mut String, snapshots: &[ShardSnapshot]) {
    let name = "jetcore_mesh_ring_capacity_envelopes";
    header(out, name, "gauge", "Envelopes each cross-shard ring holds at most.");
    let capacity = snapshots.first().map_or(0, |snapshot| snapshot.mesh_ring_capacity);
    let _ = writeln!(out, "{name} {capacity}");
    let series = [
        (
            "jetcore_mesh_ring_depth_envelopes",
            "Envelopes in the ring from this shard to a peer shard (its fill level).",
            (|s: &ShardSnapshot| &s.mesh_ring_depths) as fn(&ShardSnapshot) -> &Vec<usize>,
        ),
        (
            "jetcore_mesh_overflow_envelopes",
            "Envelopes waiting for room in the ring to a peer shard (backpressure).",
            |s: &ShardSnapshot| &s.mesh_overflow,
        ),
    ];
    for (name, help, read) in series {
        header(out, name, "gauge", help);
        for snapshot in snapshots {
            let peers = read(snapshot).iter().enumerate().filter(|(peer, _)| *peer != usize::from(snapshot.shard));
            for (peer, depth) in peers {
                let _ = writeln!(out, "{name}{{shard=\"{}\",peer=\"{peer}\"}} {depth}", snapshot.shard);
            }
        }
    }
}

fn streams(out: &mut String, snapshots: &[ShardSnapshot]) {
    type Read = fn(&crate::jetstream::stream_info::StreamInfo) -> u64;
    let series: [(&str, &str, Read); 3] = [
        ("jetcore_stream_messages", "Messages in the stream.", |i| i.state.messages),
        ("jetcore_stream_bytes", "Bytes of messages in the stream.", |i| i.state.bytes),
        ("jetcore_stream_last_sequence", "The stream's last sequence.", |i| i.state.last_seq),
    ];
    for (name, help, read) in series {
        header(out, name, "gauge", help);
        for snapshot in snapshots {
            for info in snapshot.accounts.iter().flat_map(|account| &account.streams) {
                let stream = escape(&info.config.name);
                let _ = writeln!(out, "{name}{{stream=\"{stream}\",shard=\"{}\"}} {}", snapshot.shard, read(info));
            }
        }
    }
}

fn consumers(out: &mut String, snapshots: &[ShardSnapshot]) {
    let series = [
        ("jetcore_consumer_pending", "num_pending", "Messages the consumer has yet to deliver."),
        ("jetcore_consumer_ack_pending", "num_ack_pending", "Messages delivered and not yet acknowledged."),
        ("jetcore_consumer_redelivered", "num_redelivered", "Messages redelivered and not yet acknowledged."),
        ("jetcore_consumer_waiting", "num_waiting", "Pull requests waiting."),
    ];
    for (name, field, help) in series {
        header(out, name, "gauge", help);
        for consumer in snapshots.iter().flat_map(|snapshot| &snapshot.accounts).flat_map(|account| &account.consumers)
        {
            let stream = escape(consumer["stream_name"].as_str().unwrap_or(""));
            let consumer_name = escape(consumer["name"].as_str().unwrap_or(""));
            let value = consumer[field].as_u64().unwrap_or(0);
            let _ = writeln!(out, "{name}{{stream=\"{stream}\",consumer=\"{consumer_name}\"}} {value}");
        }
    }
}

/// Escapes a label value (backslash, quote, newline).
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanoseconds_show_as_exact_seconds() {
        assert_eq!(Unit::Nanoseconds.show(1024), "0.000001024");
        assert_eq!(Unit::Nanoseconds.show(2_000_000_000), "2");
        assert_eq!(Unit::Nanoseconds.show(8_589_934_592), "8.589934592");
        assert_eq!(Unit::Count.show(512), "512");
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let counts = Pow2Counts { first_exponent: 0, buckets: vec![1, 0, 2], overflow: 1, sum: 13 };
        let mut out = String::new();
        pow2_histogram(&mut out, "x", "shard=\"0\"", &counts, Unit::Count);
        let expected = "x_bucket{shard=\"0\",le=\"1\"} 1\nx_bucket{shard=\"0\",le=\"2\"} 1\n\
            x_bucket{shard=\"0\",le=\"4\"} 3\nx_bucket{shard=\"0\",le=\"+Inf\"} 4\n\
            x_sum{shard=\"0\"} 13\nx_count{shard=\"0\"} 4\n";
        assert_eq!(out, expected);
    }
}
