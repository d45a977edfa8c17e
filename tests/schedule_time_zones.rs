//! Cron schedules in IANA time zones (`Nats-Schedule-Time-Zone`), side by side with
//! nats-server 2.15.1 (a real process, `common::hub`) reading the same zone database
//! (`$ZONEINFO`, set for both): the same zone names accepted and refused with the same
//! codes (and cron patterns that never fire refused), and a zoned schedule firing with `Nats-Schedule-Next` in the zone's local time.
//! DST arithmetic itself is unit-tested in `src/stream/cron.rs` (known transitions).
//!
//! The zone files come from `$ZONEINFO`, /usr/share/zoneinfo, or the `tzdata` package
//! `tools/test` installs into `.venv`; without any the tests fail, naming what to install.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::hub::HubNode;
use common::jetstream::{api, decode_base64, publish_raw};
use common::TestServer;
use serde_json::Value;

/// A zone database directory holding America/New_York.
fn zone_directory() -> PathBuf {
    let mut candidates: Vec<PathBuf> = std::env::var_os("ZONEINFO").map(PathBuf::from).into_iter().collect();
    candidates.push(PathBuf::from("/usr/share/zoneinfo"));
    let venv_lib = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/lib"));
    for entry in std::fs::read_dir(venv_lib).into_iter().flatten().flatten() {
        candidates.push(entry.path().join("site-packages/tzdata/zoneinfo"));
    }
    let found = candidates.into_iter().find(|directory| directory.join("America/New_York").is_file());
    found.expect("no zone database: install tzdata (tools/test puts the tzdata package into .venv)")
}

/// Both servers, started with `ZONEINFO` naming the same database.
fn start_both() -> (HubNode, TestServer) {
    // Every test in this file sets the same value before starting servers, so a race
    // between two of them is harmless.
    std::env::set_var("ZONEINFO", zone_directory());
    (HubNode::start("reference", None, ""), TestServer::start(&[]))
}

async fn schedules_stream(client: &async_nats::Client) {
    let config = r#"{"name":"S","subjects":["s.>"],"allow_msg_schedules":true}"#;
    let created = api(client, "STREAM.CREATE.S", config).await;
    assert!(created.get("error").is_none(), "{created}");
}

/// Publishes a schedule per (pattern, zone); returns each pub ack, without the stream.
async fn acceptance(url: &str) -> Vec<String> {
    let client = async_nats::connect(url).await.expect("connect");
    schedules_stream(&client).await;
    let zones = [
        "America/New_York",
        "Europe/London",
        "Australia/Lord_Howe",
        "Etc/GMT+5",
        "EST",
        "US/Eastern",
        "UTC",
        "Local",
        "Europe/London ",
        "Nope/Zone",
        "+02:00",
        "",
        "utc",
        "america/new_york",
        "America",
        "../zoneinfo/UTC",
        "/UTC",
        "Europe/../UTC",
        ".",
    ];
    let mut cases: Vec<(&str, &str)> = zones.iter().map(|zone| ("0 30 2 * * *", *zone)).collect();
    cases.extend([
        ("@daily", "Asia/Kolkata"),
        ("@every 1s", "America/New_York"),
        ("@every 1s", "Nope/Zone"),
        ("@at 2099-01-01T00:00:00Z", "Europe/London"),
        ("not a pattern", "Europe/London"),
        ("not a pattern", "Nope/Zone"),
        // Cron edge cases, zone or not: one that never fires, and what the parser allows.
        ("0 0 0 30 2 *", "UTC"),
        ("0 0 0 31 4 *", "America/New_York"),
        ("0 0 0 29 2 *", "Europe/London"),
        ("*-5 1,,2 * * * *", "UTC"),
    ]);
    let mut acks = Vec::new();
    for (index, (pattern, zone)) in cases.into_iter().enumerate() {
        let headers = [("Nats-Schedule", pattern), ("Nats-Schedule-Target", "s.t"), ("Nats-Schedule-Time-Zone", zone)];
        let ack = publish_raw(&client, &format!("s.sched.{index}"), &headers, "").await;
        acks.push(format!("{pattern:?} in {zone:?}: {} {}", ack["seq"], ack["error"]));
    }
    acks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zone_names_are_taken_and_refused_as_nats_server_takes_them() {
    let (reference, server) = start_both();
    let expected = acceptance(&reference.url()).await;
    let actual = acceptance(&server.url()).await;
    assert!(expected[0].contains(": 1 null"), "nats-server took no New York schedule: {expected:#?}");
    assert!(expected.iter().any(|ack| ack.contains("10223")), "nats-server refused no zone: {expected:#?}");
    assert_eq!(actual, expected, "jetcore's pub acks (left) differ from nats-server's (right)");
}

/// A schedule firing every second in `zone`: the fired message's header names, and the
/// offset its `Nats-Schedule-Next` is written with (the time itself moves on).
async fn fired_in(url: &str, zone: &str) -> (Vec<String>, String) {
    let client = async_nats::connect(url).await.expect("connect");
    schedules_stream(&client).await;
    let headers =
        [("Nats-Schedule", "* * * * * *"), ("Nats-Schedule-Target", "s.t"), ("Nats-Schedule-Time-Zone", zone)];
    let ack = publish_raw(&client, "s.sched", &headers, "tick").await;
    assert!(ack.get("error").is_none(), "{ack}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let reply = loop {
        let reply = api(&client, "STREAM.MSG.GET.S", r#"{"last_by_subj":"s.t"}"#).await;
        if reply["message"].is_object() {
            break reply;
        }
        assert!(tokio::time::Instant::now() < deadline, "nothing fired within 5 s: {reply}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let block = String::from_utf8(decode_base64(reply["message"]["hdrs"].as_str().expect("headers"))).unwrap();
    let lines: Vec<(String, String)> = block
        .split("\r\n")
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
        .collect();
    let next = lines.iter().find(|(name, _)| name == "Nats-Schedule-Next").expect("Nats-Schedule-Next").1.clone();
    // `2026-12-04T03:25:31+11:00`: the offset follows the 19 characters of the time.
    assert_eq!(next.as_bytes().get(10), Some(&b'T'), "{next}");
    let offset = next[19..].to_string();
    (lines.into_iter().map(|(name, _)| name).collect(), offset)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zoned_schedule_fires_with_its_next_time_in_local_time() {
    let (reference, server) = start_both();
    for zone in ["Australia/Lord_Howe", "America/New_York", "Asia/Kolkata"] {
        let expected = fired_in(&reference.url(), zone).await;
        let actual = fired_in(&server.url(), zone).await;
        assert_ne!(expected.1, "Z", "nats-server wrote {zone}'s time in UTC");
        assert_eq!(actual, expected, "in {zone}: jetcore's fired headers (left) differ from nats-server's (right)");
        for url in [reference.url(), server.url()] {
            let client = async_nats::connect(url).await.expect("connect");
            let deleted: Value = api(&client, "STREAM.DELETE.S", "").await;
            assert_eq!(deleted["success"], true, "{deleted}");
        }
    }
}
