//! A stream's `$JS.API` config across restarts: a damaged or half-written config is never
//! replaced by defaults (the stream is reported and not served, its files kept, its name
//! not reusable), and a store written before the config moved into `meta.json` (with a
//! separate `jetstream.json`) opens with everything the client set, migrated.

mod common;

use std::path::{Path, PathBuf};

use common::jetstream::{api, connect};
use common::TestServer;
use serde_json::Value;

/// Text only the client's config carries (the engine's own config has no description).
const DESCRIPTION: &str = "guarded by its config";

const GUARDED_CONFIG: &str = r#"{"name":"GUARDED","subjects":["guarded.>"],"storage":"file",
    "description":"guarded by its config","deny_delete":true,"deny_purge":true,
    "republish":{"src":"guarded.>","dest":"copied.>"}}"#;

fn stream_dir(server: &TestServer, name: &str) -> PathBuf {
    server.store_dir.join("jetstream").join("streams").join(name)
}

/// The files of `dir` holding `needle` (the persisted client config).
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("stream dir")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| {
            let bytes = std::fs::read(path).expect("read stream file");
            bytes.windows(needle.len()).any(|window| window == needle.as_bytes())
        })
        .collect();
    found.sort();
    found
}

/// Creates GUARDED with one message, stops the server, damages every file holding its
/// client config with `damage`, restarts, and checks the config was not replaced.
async fn damaged_config_is_not_replaced(damage: fn(&Path)) {
    let mut server = TestServer::start(&[]);
    let (client, _js) = connect(&server).await;
    let created = api(&client, "STREAM.CREATE.GUARDED", GUARDED_CONFIG).await;
    assert!(created["error"].is_null(), "{created}");
    client.request("guarded.a", "one".into()).await.expect("publish");
    drop(client);
    server.kill();

    let dir = stream_dir(&server, "GUARDED");
    let damaged = files_holding(&dir, DESCRIPTION);
    assert!(!damaged.is_empty(), "no file in {} holds the config", dir.display());
    for path in &damaged {
        damage(path);
    }
    let damaged_bytes: Vec<Vec<u8>> = damaged.iter().map(|path| std::fs::read(path).expect("read")).collect();

    server.restart();
    let (client, _js) = connect(&server).await;
    let info = api(&client, "STREAM.INFO.GUARDED", "").await;
    // Served with defaults it would accept deletes and purges the client had denied.
    assert!(info["error"].is_object(), "a stream with a damaged config was served: {info}");
    let recreated = api(&client, "STREAM.CREATE.GUARDED", r#"{"name":"GUARDED","subjects":["guarded.>"]}"#).await;
    assert!(recreated["error"].is_object(), "a damaged stream's name was reused: {recreated}");
    for (path, bytes) in damaged.iter().zip(&damaged_bytes) {
        assert_eq!(&std::fs::read(path).expect("damaged file kept"), bytes, "{} was rewritten", path.display());
    }
}

/// Flips one bit inside the description.
fn flip_a_bit(path: &Path) {
    let mut bytes = std::fs::read(path).expect("read");
    let at = bytes.windows(DESCRIPTION.len()).position(|window| window == DESCRIPTION.as_bytes()).expect("description");
    bytes[at + 3] ^= 0x01;
    std::fs::write(path, bytes).expect("write");
}

/// Cuts the file in the middle of the description, as a write that stopped there.
fn cut_short(path: &Path) {
    let bytes = std::fs::read(path).expect("read");
    let at = bytes.windows(DESCRIPTION.len()).position(|window| window == DESCRIPTION.as_bytes()).expect("description");
    std::fs::write(path, &bytes[..at + 3]).expect("write");
}

#[tokio::test]
async fn a_flipped_bit_in_the_config_is_reported_not_replaced_by_defaults() {
    damaged_config_is_not_replaced(flip_a_bit).await;
}

#[tokio::test]
async fn a_half_written_config_is_reported_not_replaced_by_defaults() {
    damaged_config_is_not_replaced(cut_short).await;
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read fixture dir") {
        let path = entry.expect("fixture entry").path();
        let target = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy fixture file");
        }
    }
}

fn assert_legacy_config(info: &Value) {
    assert!(info["error"].is_null(), "{info}");
    let config = &info["config"];
    assert_eq!(config["description"], "written before meta.json held the API config", "{info}");
    assert_eq!(config["sealed"], true, "{info}");
    assert_eq!(config["deny_delete"], true, "{info}");
    assert_eq!(config["deny_purge"], true, "{info}");
    assert_eq!(config["max_msgs_per_subject"], 5, "{info}");
    assert_eq!(config["republish"]["dest"], "copied.>", "{info}");
    assert_eq!(info["created"], "2026-12-02T01:02:09.221182029Z", "{info}");
    assert_eq!(info["state"]["messages"], 3, "{info}");
}

/// tests/data/legacy_jetstream_json: a store written by jetcore before this change (a
/// sealed stream LEGACY with deny_delete, deny_purge, republish and three messages).
#[tokio::test]
async fn a_store_with_jetstream_json_opens_with_its_config_and_is_migrated() {
    let mut server = TestServer::start(&[]);
    server.kill();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/legacy_jetstream_json");
    copy_tree(&fixture, &server.store_dir);

    server.restart();
    let (client, _js) = connect(&server).await;
    assert_legacy_config(&api(&client, "STREAM.INFO.LEGACY", "").await);
    let dir = stream_dir(&server, "LEGACY");
    assert!(!dir.join("jetstream.json").exists(), "jetstream.json left after migration");
    drop(client);

    server.restart();
    let (client, _js) = connect(&server).await;
    assert_legacy_config(&api(&client, "STREAM.INFO.LEGACY", "").await);
    let deleted = api(&client, "STREAM.MSG.DELETE.LEGACY", r#"{"seq":1}"#).await;
    assert!(deleted["error"].is_object(), "a sealed stream deleted a message: {deleted}");
}
