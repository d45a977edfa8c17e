//! A backup's two transfers as the official tools make them through async-nats 0.51,
//! shared by `asyncnats_backup` (against a server) and `backup_ceiling` (against a server
//! that does no work, which leaves the client's own ceiling).

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};

pub type Failure = Box<dyn std::error::Error>;

/// How long any chunk, ack or reply may take.
pub const CHUNK_TIMEOUT: Duration = Duration::from_secs(30);

/// A `$JS.API` request whose reply must not carry an error.
pub async fn api(client: &async_nats::Client, call: &str, body: Value) -> Result<Value, Failure> {
    let reply = client.request(format!("$JS.API.{call}"), body.to_string().into()).await?;
    let value: Value = serde_json::from_slice(&reply.payload)?;
    if !value["error"].is_null() {
        return Err(format!("{call}: {}", value["error"]).into());
    }
    Ok(value)
}

/// Takes a backup of `stream` into `archive` as `nats stream backup` does: every chunk
/// acked, the empty message ends it. Returns the snapshot response and the seconds taken.
/// Size `archive` before: growing it here would charge the client's copies and page
/// faults to the server measured.
pub async fn snapshot(
    client: &async_nats::Client,
    stream: &str,
    chunk_size: usize,
    archive: &mut Vec<u8>,
) -> Result<(Value, f64), Failure> {
    let inbox = client.new_inbox();
    let mut chunks = client.subscribe(inbox.clone()).await?;
    let started = Instant::now();
    let request = json!({"deliver_subject": inbox, "chunk_size": chunk_size});
    let response = api(client, &format!("STREAM.SNAPSHOT.{stream}"), request).await?;
    loop {
        let chunk = tokio::time::timeout(CHUNK_TIMEOUT, chunks.next()).await?.ok_or("chunks ended")?;
        if chunk.payload.is_empty() {
            if let Some(status) = chunk.status.filter(|status| status.as_u16() >= 400) {
                return Err(format!("backup ended with {status}").into());
            }
            break;
        }
        archive.extend_from_slice(&chunk.payload);
        if let Some(reply) = chunk.reply {
            client.publish(reply, Default::default()).await?;
        }
    }
    Ok((response, started.elapsed().as_secs_f64()))
}

/// Uploads `archive` as `nats stream restore` does, each chunk a request, after asking
/// for the restore with `request` (the snapshot response's config and state). Returns the
/// reply to the end-of-upload request and the seconds taken to upload and in all.
pub async fn restore(
    client: &async_nats::Client,
    stream: &str,
    request: Value,
    archive: &[u8],
    chunk_size: usize,
) -> Result<(Value, f64, f64), Failure> {
    let started = Instant::now();
    let opened = api(client, &format!("STREAM.RESTORE.{stream}"), request).await?;
    let upload = opened["deliver_subject"].as_str().ok_or("no upload subject")?.to_string();
    for chunk in archive.chunks(chunk_size) {
        let ack = client.request(upload.clone(), chunk.to_vec().into()).await?;
        if !ack.payload.is_empty() {
            return Err(format!("chunk refused: {}", String::from_utf8_lossy(&ack.payload)).into());
        }
    }
    let upload_s = started.elapsed().as_secs_f64();
    let done = client.request(upload, Default::default()).await?;
    let restore_s = started.elapsed().as_secs_f64();
    let restored: Value = serde_json::from_slice(&done.payload)?;
    if !restored["error"].is_null() {
        return Err(format!("restore: {}", restored["error"]).into());
    }
    Ok((restored, upload_s, restore_s))
}
