//! A full disk on a real filesystem (reliability matrix row 8): the server's data
//! directory is a 48 MiB tmpfs, or a loop-mounted 64 MiB ext4 image, nearly filled by a
//! ballast file. Publishing goes on until
//! the disk is full. Pass: a refused publish gets an error reply, never an ack; the
//! stream's state is what it was before the refused publish; reads and consumer acks
//! keep working; once the ballast is deleted, publishing resumes without a restart, at
//! the next sequence; after a kill -9 and restart every acknowledged message is there.
//! Each full-disk episode sends one `$JS.EVENT.ADVISORY.SERVER.OUT_OF_STORAGE`.
//!
//! Needs root (to mount); otherwise it is skipped with a message. The mount is removed at
//! the end, also when the test fails.

#[path = "common/killnine/process.rs"]
mod process;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use async_nats::jetstream::{self, consumer::PullConsumer, Context};
use futures::StreamExt;
use process::ServerProcess;

const DISK_BYTES: u64 = 48 << 20;
const EXT4_IMAGE_BYTES: u64 = 64 << 20;
/// Space left free by the ballast: a few segments' worth, so the disk fills quickly.
const LEFT_FREE_BYTES: u64 = 6 << 20;
const PAYLOAD_BYTES: usize = 4000;
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the consumer waits for a double ack's confirmation.
const ACK_TIMEOUT: Duration = Duration::from_millis(500);
/// Messages the consumer takes on the full disk (each unconfirmed ack waits ACK_TIMEOUT).
const CONSUMED_WHILE_FULL: usize = 4;

/// A small filesystem mounted for the test; unmounted when dropped (also during a panic).
struct Mount {
    dir: tempfile::TempDir,
    /// The ext4 image file's directory, if the mount is a loop-mounted ext4.
    _image: Option<tempfile::TempDir>,
}

impl Mount {
    fn tmpfs(bytes: u64) -> Mount {
        let dir = tempfile::tempdir().expect("mount point");
        run(Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"]).arg(dir.path()));
        Mount { dir, _image: None }
    }

    /// An ext4 image of `bytes`, loop-mounted.
    fn ext4(bytes: u64) -> Mount {
        let image_dir = tempfile::tempdir().expect("image dir");
        let image = image_dir.path().join("disk.img");
        std::fs::File::create(&image).expect("image").set_len(bytes).expect("image size");
        run(Command::new("mkfs.ext4").arg("-q").arg(&image));
        let dir = tempfile::tempdir().expect("mount point");
        run(Command::new("mount").args(["-o", "loop"]).arg(&image).arg(dir.path()));
        Mount { dir, _image: Some(image_dir) }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Free bytes, counting the blocks reserved for root (the server runs as root here).
    fn free_bytes(&self) -> u64 {
        let path = std::ffi::CString::new(self.path().as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: statvfs writes into the zeroed struct we pass; the path is NUL-terminated.
        let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
        let result = unsafe { libc::statvfs(path.as_ptr(), &mut stats) };
        assert_eq!(result, 0, "statvfs");
        stats.f_bfree as u64 * stats.f_frsize as u64
    }
}

fn run(command: &mut Command) {
    let status = command.status().unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(status.success(), "{command:?}: {status}");
}

impl Drop for Mount {
    fn drop(&mut self) {
        let unmounted = Command::new("umount").arg(self.dir.path()).status();
        if !unmounted.is_ok_and(|status| status.success()) {
            let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
        }
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Fills all but about `leave` bytes of the mount with a ballast file.
fn place_ballast(mount: &Mount, leave: u64) -> PathBuf {
    place_ballast_named(mount, "ballast", leave)
}

fn place_ballast_named(mount: &Mount, name: &str, leave: u64) -> PathBuf {
    use std::io::Write;
    let path = mount.path().join(name);
    let mut file = std::fs::File::create(&path).expect("ballast");
    for chunk_bytes in [1 << 20, 4096] {
        let chunk = vec![0xB5u8; chunk_bytes];
        while mount.free_bytes() >= leave + chunk.len() as u64 {
            if file.write_all(&chunk).is_err() {
                break; // full: that is the point
            }
        }
    }
    let _ = file.sync_all();
    path
}

/// Publishes one message and waits for the reply: the ack's sequence, or the error text.
async fn publish(context: &Context, index: u64) -> Result<u64, String> {
    let payload = payload(index);
    let sent = context.publish("full.x", payload.into()).await.map_err(|e| format!("send: {e}"))?;
    sent.await.map(|ack| ack.sequence).map_err(|e| e.to_string())
}

fn payload(index: u64) -> Vec<u8> {
    let mut bytes = format!("full {index} ").into_bytes();
    bytes.resize(PAYLOAD_BYTES, b'a' + (index % 26) as u8);
    bytes
}

async fn stream_state(context: &Context) -> (u64, u64, u64) {
    let mut stream = context.get_stream("FULL").await.expect("stream");
    let state = stream.info().await.expect("stream info").state.clone();
    (state.messages, state.first_sequence, state.last_sequence)
}

const OUT_OF_STORAGE: &str = "$JS.EVENT.ADVISORY.SERVER.OUT_OF_STORAGE";

/// How many messages arrive until none comes for half a second.
async fn arrived(subscriber: &mut async_nats::Subscriber) -> usize {
    let mut count = 0;
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(500), subscriber.next()).await {
        count += 1;
    }
    count
}

async fn connect(server: &ServerProcess) -> Context {
    let client = async_nats::ConnectOptions::new()
        .request_timeout(Some(REPLY_TIMEOUT))
        .connect(server.url())
        .await
        .expect("connect");
    jetstream::ContextBuilder::new().timeout(REPLY_TIMEOUT).build(client)
}

/// Fetches up to `count` messages from the durable consumer and double-acks each: the
/// sequences delivered, and those whose ack the server confirmed (it confirms only once
/// the consumer's state is on disk).
async fn consume_and_ack(consumer: &PullConsumer, count: usize) -> (Vec<u64>, Vec<u64>) {
    let mut batch =
        consumer.fetch().max_messages(count).expires(Duration::from_secs(1)).messages().await.expect("fetch");
    let mut messages = Vec::new();
    while let Some(message) = batch.next().await {
        messages.push(message.expect("message"));
    }
    let (mut delivered, mut confirmed) = (Vec::new(), Vec::new());
    for message in messages {
        let seq = message.info().expect("info").stream_sequence;
        delivered.push(seq);
        if let Ok(Ok(())) = tokio::time::timeout(ACK_TIMEOUT, message.double_ack()).await {
            confirmed.push(seq);
        }
    }
    (delivered, confirmed)
}

/// A client for the consumer (its own connection, like a separate application).
async fn consumer_context(server: &ServerProcess) -> Context {
    let client = async_nats::ConnectOptions::new()
        .request_timeout(Some(ACK_TIMEOUT))
        .connect(server.url())
        .await
        .expect("connect");
    jetstream::new(client)
}

#[tokio::test]
async fn full_tmpfs_refuses_publishes_and_recovers_without_restart() {
    if !is_root() {
        eprintln!("SKIPPED crash_full_disk (tmpfs): mounting a filesystem needs root");
        return;
    }
    full_disk_refuses_publishes_and_recovers_without_restart(Mount::tmpfs(DISK_BYTES)).await;
}

#[tokio::test]
async fn full_ext4_refuses_publishes_and_recovers_without_restart() {
    if !is_root() {
        eprintln!("SKIPPED crash_full_disk (ext4): mounting a filesystem needs root");
        return;
    }
    full_disk_refuses_publishes_and_recovers_without_restart(Mount::ext4(EXT4_IMAGE_BYTES)).await;
}

async fn full_disk_refuses_publishes_and_recovers_without_restart(mount: Mount) {
    let binary = std::env::var_os("JETCORE_BIN").map_or_else(|| env!("CARGO_BIN_EXE_jetcore").into(), PathBuf::from);
    let mut server = ServerProcess::start(&binary, &mount.path().join("store"), &[]);
    let context = connect(&server).await;
    let watcher = async_nats::connect(server.url()).await.expect("connect");
    let mut out_of_storage = watcher.subscribe(OUT_OF_STORAGE).await.expect("subscribe");
    watcher.flush().await.expect("flush");
    let config =
        jetstream::stream::Config { name: "FULL".into(), subjects: vec!["full.>".into()], ..Default::default() };
    let stream = context.create_stream(config).await.expect("create stream");
    let durable = jetstream::consumer::pull::Config {
        durable_name: Some("READER".into()),
        ack_policy: jetstream::consumer::AckPolicy::Explicit,
        ..Default::default()
    };
    stream.create_consumer(durable).await.expect("consumer");
    let consumer: PullConsumer = consumer_context(&server)
        .await
        .get_stream("FULL")
        .await
        .expect("stream")
        .get_consumer("READER")
        .await
        .expect("consumer");
    let ballast = place_ballast(&mount, LEFT_FREE_BYTES);

    let mut acked: BTreeMap<u64, u64> = BTreeMap::new(); // seq → payload index
    let mut index = 0;
    let (refusal, before) = loop {
        index += 1;
        let before = stream_state(&context).await;
        match publish(&context, index).await {
            Ok(seq) => assert!(acked.insert(seq, index).is_none(), "sequence {seq} acked twice"),
            Err(error) => break (error, before),
        }
        assert!(index < 10_000, "the disk never filled (free: {})", mount.free_bytes());
    };
    println!("disk full after {} acked publishes ({} bytes free): {refusal}", acked.len(), mount.free_bytes());
    assert_eq!(stream_state(&context).await, before, "a refused publish changed the stream");
    // More refusals: each an error, none an ack, state unchanged.
    for _ in 0..3 {
        index += 1;
        let refused = publish(&context, index).await;
        assert!(refused.is_err(), "a publish on a full disk was acked: {refused:?}");
        assert_eq!(stream_state(&context).await, before, "a refused publish changed the stream");
    }
    // Reads work: the newest acknowledged message, exactly.
    let (last_seq, last_index) = acked.last_key_value().map(|(s, i)| (*s, *i)).expect("some acked");
    let message = stream.get_raw_message(last_seq).await.expect("read on a full disk");
    assert_eq!(message.payload, payload(last_index), "seq {last_seq}");
    std::fs::remove_file(&ballast).expect("remove ballast");
    index += 1;
    let resumed = publish(&context, index).await.expect("publishing resumes once space is freed, without a restart");
    assert_eq!(resumed, last_seq + 1, "the next sequence after the refused ones");
    acked.insert(resumed, index);
    assert_eq!(arrived(&mut out_of_storage).await, 1, "OUT_OF_STORAGE advisories of the first episode");

    // Now take every last byte, so each write (state files, checkpoints) meets a full
    // disk; publishing goes on into the preallocated segment until that is used up.
    let _last_bytes = place_ballast_named(&mount, "ballast-last", 0);
    println!("now {} bytes free", mount.free_bytes());
    let refusal = loop {
        index += 1;
        match publish(&context, index).await {
            Ok(seq) => assert!(acked.insert(seq, index).is_none(), "sequence {seq} acked twice"),
            Err(error) => break error,
        }
        assert!(index < 20_000, "the preallocated segment never filled");
    };
    println!("full again after {} acked publishes: {refusal}", acked.len());
    assert_eq!(arrived(&mut out_of_storage).await, 1, "OUT_OF_STORAGE advisories of the second episode");
    // Consumers keep delivering; a double ack is confirmed only if the consumer's state
    // could be written. Then SIGKILL while the disk is still full: a confirmed ack must
    // survive it, whatever could not be written is simply redelivered.
    let (delivered_full, confirmed_full) = consume_and_ack(&consumer, CONSUMED_WHILE_FULL).await;
    assert_eq!(delivered_full.len(), CONSUMED_WHILE_FULL, "consumer deliveries on a full disk");
    println!("on the full disk {} of {} double acks were confirmed", confirmed_full.len(), delivered_full.len());
    server.kill();
    std::fs::remove_file(mount.path().join("ballast-last")).expect("remove ballast");

    // Nothing acknowledged was lost: after the restart every message is there.
    server.restart().expect("restart");
    let context = connect(&server).await;
    let stream = context.get_stream("FULL").await.expect("stream after restart");
    for (seq, index) in &acked {
        let message = stream.get_raw_message(*seq).await.unwrap_or_else(|e| panic!("acked seq {seq} lost: {e}"));
        assert_eq!(message.payload, payload(*index), "seq {seq}");
    }
    let consumer: PullConsumer = consumer_context(&server)
        .await
        .get_stream("FULL")
        .await
        .expect("stream")
        .get_consumer("READER")
        .await
        .expect("consumer after restart");
    let (redelivered, confirmed) = consume_and_ack(&consumer, 2 * CONSUMED_WHILE_FULL).await;
    assert!(
        redelivered.iter().all(|seq| !confirmed_full.contains(seq)),
        "messages whose double ack was confirmed on the full disk were redelivered: {redelivered:?} \
         (confirmed: {confirmed_full:?})"
    );
    assert_eq!(confirmed, redelivered, "double acks confirmed once space is freed");
    index += 1;
    let next = publish(&context, index).await.expect("publish after the restart");
    assert_eq!(next, acked.last_key_value().map(|(s, _)| s + 1).expect("acked"), "sequence after the restart");
    drop(server);
    drop(mount);
}
