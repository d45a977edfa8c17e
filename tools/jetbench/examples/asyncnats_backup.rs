//! Stream backup and restore throughput through async-nats 0.51 (issue 26's targets: a
//! snapshot of a 1 GiB stream at ≥ 0.8× the disk's sequential read bandwidth, a restore at
//! ≥ 0.5× its write bandwidth). Fills a file stream, takes its backup the way `nats stream
//! backup` does (`$JS.API.STREAM.SNAPSHOT`, every chunk acked), deletes the stream and
//! restores it the way `nats stream restore` does (`$JS.API.STREAM.RESTORE`, each chunk a
//! request), then checks the restored state equals the original. Run it against each
//! server with the same arguments; `perf/backup` does, beside the disk's own figures.
//!
//! Usage: asyncnats_backup [URL] [MIB] [MSG_SIZE] [CHUNK_KIB]
//!   (defaults nats://127.0.0.1:4222 1024 1024 128)
//! Prints one JSON line: {"client":"async-nats-backup","stream_bytes":..,"snapshot_s":..,..}.
//! With `SERVER_PID` set, also the server's CPU time (user + system, all its threads, from
//! /proc) during the snapshot and the restore: `snapshot_server_cpu_s`, `restore_server_cpu_s`;
//! the client's own during the restore, `restore_client_cpu_s` (the two share the machine's
//! CPUs); and the server's by thread during the restore, `restore_server_threads_cpu_s`.

#[path = "backup/transfer.rs"]
mod transfer;

use std::collections::VecDeque;
use std::time::Instant;

use async_nats::jetstream;
use serde_json::json;

use transfer::{api, CHUNK_TIMEOUT};

const DEFAULT_URL: &str = "nats://127.0.0.1:4222";
const STREAM: &str = "BACKUPBENCH";
/// Unacknowledged publishes while filling the stream.
const FILL_WINDOW: usize = 256;

/// The CPU time (user + system, all threads) process `pid` has used, in seconds.
fn process_cpu_s(pid: Option<u32>) -> Option<f64> {
    stat_cpu_s(&std::fs::read_to_string(format!("/proc/{}/stat", pid?)).ok()?).map(|(_, cpu)| cpu)
}

/// A `/proc/…/stat` line's command name and CPU time (user + system) in seconds: the
/// fields after the name's closing parenthesis, utime and stime the 14th and 15th of the
/// line, in clock ticks (USER_HZ, 100 on Linux).
fn stat_cpu_s(stat: &str) -> Option<(&str, f64)> {
    let (head, tail) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = tail.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some((head.split_once('(').map_or("", |(_, name)| name), ticks as f64 / 100.0))
}

/// The CPU time of each of process `pid`'s threads, by name and id, in seconds.
fn thread_cpu_s(pid: Option<u32>) -> std::collections::BTreeMap<String, f64> {
    let Some(pid) = pid else { return Default::default() };
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Default::default() };
    let mut threads = std::collections::BTreeMap::new();
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else { continue };
        let Some((name, cpu)) = stat_cpu_s(&stat) else { continue };
        threads.insert(format!("{name}/{}", task.file_name().to_string_lossy()), cpu);
    }
    threads
}

/// Each thread's CPU time since `before` (`thread_cpu_s`), the idle ones left out.
fn thread_cpu_since(pid: Option<u32>, before: &std::collections::BTreeMap<String, f64>) -> serde_json::Value {
    let now = thread_cpu_s(pid);
    let used = now.iter().map(|(thread, cpu)| (thread, cpu - before.get(thread).copied().unwrap_or(0.0)));
    serde_json::Value::Object(
        used.filter(|(_, cpu)| *cpu > 0.0).map(|(thread, cpu)| (thread.clone(), json!(cpu))).collect(),
    )
}

/// With `PERF_CTL_FIFO` set (`perf record -D -1 --control fifo:PATH`), the profile is
/// turned on for the restore alone.
fn perf_control(command: &str) {
    if let Ok(path) = std::env::var("PERF_CTL_FIFO") {
        let _ = std::fs::write(path, format!("{command}\n"));
    }
}

/// Refuses a restored stream whose state differs from the original's (`info`).
async fn check_restored(
    client: &async_nats::Client,
    info: &serde_json::Value,
) -> Result<(), Box<dyn std::error::Error>> {
    let after = api(client, &format!("STREAM.INFO.{STREAM}"), json!({})).await?;
    for field in ["messages", "bytes", "first_seq", "last_seq"] {
        if after["state"][field] != info["state"][field] {
            return Err(format!("restored {field} {} != {}", after["state"][field], info["state"][field]).into());
        }
    }
    Ok(())
}

fn argument<T: std::str::FromStr>(arguments: &[String], index: usize, default: T) -> T {
    arguments.get(index).and_then(|text| text.parse().ok()).unwrap_or(default)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let url = arguments.first().cloned().unwrap_or_else(|| DEFAULT_URL.to_string());
    let mib: u64 = argument(&arguments, 1, 1024);
    let message_size: usize = argument(&arguments, 2, 1024);
    let chunk_size: usize = argument(&arguments, 3, 128usize) * 1024;
    let server_pid: Option<u32> = std::env::var("SERVER_PID").ok().and_then(|pid| pid.parse().ok());
    let cpu_since = |pid: Option<u32>, before: Option<f64>| Some(process_cpu_s(pid)? - before?);

    let client = async_nats::ConnectOptions::new().request_timeout(Some(CHUNK_TIMEOUT)).connect(url.as_str()).await?;
    let context = jetstream::new(client.clone());
    let _ = api(&client, &format!("STREAM.DELETE.{STREAM}"), json!({})).await;
    api(&client, &format!("STREAM.CREATE.{STREAM}"), json!({"name": STREAM, "subjects": ["backupbench.>"]})).await?;

    // Fill with pseudo-random payloads: the archive's compression finds nothing to save,
    // so every stored byte crosses the wire (the backup's worst case).
    let messages = mib * 1024 * 1024 / message_size as u64;
    let started = Instant::now();
    let mut in_flight = VecDeque::with_capacity(FILL_WINDOW);
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    for index in 0..messages {
        let payload: Vec<u8> = (0..message_size)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        in_flight.push_back(context.publish(format!("backupbench.{}", index % 16), payload.into()).await?);
        if in_flight.len() == FILL_WINDOW {
            in_flight.pop_front().expect("a publish in flight").await?;
        }
    }
    for ack in in_flight {
        ack.await?;
    }
    let fill_s = started.elapsed().as_secs_f64();
    let info = api(&client, &format!("STREAM.INFO.{STREAM}"), json!({})).await?;
    let stream_bytes = info["state"]["bytes"].as_u64().unwrap_or(0);

    // Backup, as `nats stream backup`: every chunk acked, the empty message ends it.
    // Sized and touched before the clock starts: growing a 1 GiB buffer by doubling, or
    // faulting its pages in as chunks land, costs the client copies and page faults
    // (slow and erratic on this VM) that would be charged to whichever server it measures.
    let mut archive = vec![1u8; stream_bytes as usize + stream_bytes as usize / 16 + (1 << 20)];
    archive.clear();
    let cpu_before = process_cpu_s(server_pid);
    let (response, snapshot_s) = transfer::snapshot(&client, STREAM, chunk_size, &mut archive).await?;
    let snapshot_server_cpu_s = cpu_since(server_pid, cpu_before);

    // Restore, as `nats stream restore`: the stream deleted first, each chunk a request.
    api(&client, &format!("STREAM.DELETE.{STREAM}"), json!({})).await?;
    let request = json!({"config": response["config"], "state": response["state"]});
    // With `RESTORE_REPEAT=n`, n − 1 restores before the one reported, each printed to
    // stderr: many samples of the restore for one fill, to compare builds on a noisy machine.
    let repeats: u32 = std::env::var("RESTORE_REPEAT").ok().and_then(|n| n.parse().ok()).unwrap_or(1);
    for round in 1..repeats {
        let cpu_before = process_cpu_s(server_pid);
        let (_, upload_s, restore_s) =
            transfer::restore(&client, STREAM, request.clone(), &archive, chunk_size).await?;
        let cpu = cpu_since(server_pid, cpu_before);
        check_restored(&client, &info).await?;
        api(&client, &format!("STREAM.DELETE.{STREAM}"), json!({})).await?;
        let mib_per_s = stream_bytes as f64 / 1_048_576.0 / restore_s;
        let end_s = restore_s - upload_s;
        eprintln!(
            "{}",
            json!({"round": round, "restore_mib_per_s": mib_per_s, "restore_server_cpu_s": cpu, "end_s": end_s})
        );
    }
    let cpu_before = process_cpu_s(server_pid);
    let client_cpu_before = process_cpu_s(Some(std::process::id()));
    let threads_before = thread_cpu_s(server_pid);
    perf_control("enable");
    let (_, upload_s, restore_s) = transfer::restore(&client, STREAM, request, &archive, chunk_size).await?;
    perf_control("disable");
    let restore_server_cpu_s = cpu_since(server_pid, cpu_before);
    let restore_client_cpu_s = cpu_since(Some(std::process::id()), client_cpu_before);
    let restore_server_threads = thread_cpu_since(server_pid, &threads_before);
    check_restored(&client, &info).await?;
    let _ = api(&client, &format!("STREAM.DELETE.{STREAM}"), json!({})).await;

    let mib_per_s = |bytes: u64, seconds: f64| bytes as f64 / 1_048_576.0 / seconds;
    println!(
        "{}",
        json!({
            "client": "async-nats-backup",
            "messages": messages,
            "stream_bytes": stream_bytes,
            "archive_bytes": archive.len(),
            "chunk_size": chunk_size,
            "fill_s": fill_s,
            "snapshot_s": snapshot_s,
            "restore_s": restore_s,
            "restore_upload_s": upload_s,
            "snapshot_mib_per_s": mib_per_s(stream_bytes, snapshot_s),
            "restore_mib_per_s": mib_per_s(stream_bytes, restore_s),
            "snapshot_server_cpu_s": snapshot_server_cpu_s,
            "restore_server_cpu_s": restore_server_cpu_s,
            "restore_client_cpu_s": restore_client_cpu_s,
            "restore_server_threads_cpu_s": restore_server_threads,
        })
    );
    Ok(())
}
