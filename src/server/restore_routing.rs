//! `STREAM.RESTORE` on the mesh. The request and every uploaded chunk go to the
//! coordinator (shard 0), which checks each chunk as it arrives, hands it to the upload's
//! staging file (`STORE_DIR/restore-staging/`, emptied at start) and acks it; the empty
//! message ends the upload, once every staged byte is written: the coordinator creates the stream
//! (the same serialised path as `STREAM.CREATE`), and its owner reads the messages back
//! from the staging file, stores them and answers with the stream's info. The staging
//! file is removed when the upload ends, fails or goes idle, so memory holds only the
//! chunk at hand, whatever the backup's size.
//!
//! The staging file is written with direct I/O, a buffer at a time behind the acks
//! (`DmaStreamWriter`'s write-behind). Buffered writes went through the page cache at
//! ~65% of a core for the kernel's copy into fresh pages, one write at a time, and were
//! what held a 1 GiB upload back (perf/backup.md).
//!
//! Uploads in progress are the coordinator's alone: a thread-local table by upload id.
//! Each upload's chunks are taken one at a time (its `gate`), so they are staged in the
//! order they arrived and the end waits for the last write.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_lite::AsyncWriteExt;
use glommio::io::{DmaFile, DmaStreamWriter, DmaStreamWriterBuilder};
use glommio::sync::Semaphore;

use super::account::AccountId;
use super::envelope::{ApiForward, Envelope, ShardCall, ShardReturn};
use super::jetstream_routing::{Operation, COORDINATOR};
use super::node::Node;
use super::router::Publish;
use crate::jetstream::backup_api::{transfer_stream, RestoreBody, RestoreRequest, RESTORE_PREFIX};
use crate::jetstream::errors::ApiError;
use crate::jetstream::request::parse_body;
use crate::jetstream::responses::{encode_reply, is_error_reply, ResponseType};
use crate::jetstream::service::{restore_failed, RestoreUpload, RESTORE_STAGING_DIR};
use crate::jetstream::stream_config::{ConfigPurpose, StreamConfig};
use crate::limits;

/// One upload: whose, into which stream, with which config, and what has arrived.
struct Upload {
    account: AccountId,
    stream: String,
    config: Vec<u8>,
    upload: RestoreUpload,
    /// When the last chunk arrived: an upload idle for `UPLOAD_IDLE_MAX` is dropped.
    active_at: Instant,
    opened_at: Instant,
    /// The staging file's path, and its writer once the first chunk created it (taken
    /// out while a chunk is written: one chunk at a time, under `gate`).
    staged: PathBuf,
    file: Option<DmaStreamWriter>,
    /// Bytes staged so far: where the next chunk goes.
    written: u64,
    /// One chunk (or the end) at a time.
    gate: Rc<Semaphore>,
}

/// The staging writer's buffer, and how many of them may be written at once.
const STAGING_BUFFER_BYTES: usize = 1 << 20;
const STAGING_WRITE_BEHIND: usize = 4;

/// How long an upload may go without a chunk (nats-server: 5 s).
const UPLOAD_IDLE_MAX: Duration = Duration::from_secs(5);

thread_local! {
    static UPLOADS: RefCell<HashMap<String, Upload>> = RefCell::new(HashMap::new());
    static UPLOAD_COUNT: Cell<u64> = const { Cell::new(0) };
}

/// True for a restore's upload subject.
pub fn is_restore_subject(subject: &[u8]) -> bool {
    subject.starts_with(RESTORE_PREFIX.as_bytes())
}

impl Node {
    /// Routes an uploaded chunk to the coordinator.
    pub(super) fn route_restore_chunk(self: &Rc<Self>, account: AccountId, publish: &Publish<'_>) -> bool {
        let Ok(subject) = std::str::from_utf8(publish.subject) else { return false };
        let forward = ApiForward {
            account,
            subject: subject.to_string(),
            reply: publish.reply.map(Bytes::copy_from_slice),
            body: Bytes::copy_from_slice(publish.payload),
        };
        if self.shard == COORDINATOR {
            let node = self.clone();
            glommio::spawn_local(async move { node.restore_chunk_here(forward).await }).detach();
        } else {
            self.send(COORDINATOR, Envelope::Api(Box::new(forward)));
        }
        true
    }

    /// Answers `STREAM.RESTORE` on the coordinator: the upload subject, or nats-server's
    /// refusal (bad request, name mismatch, stream exists).
    pub(super) fn answer_restore(&self, account: AccountId, stream: &str, body: &[u8]) -> Vec<u8> {
        let outcome = self.open_upload(account, stream, body);
        encode_reply(ResponseType::StreamRestore, &outcome)
    }

    fn open_upload(&self, account: AccountId, stream: &str, body: &[u8]) -> Result<RestoreBody, ApiError> {
        let value = parse_body(body)?.ok_or_else(ApiError::bad_request)?;
        let request: RestoreRequest = serde_json::from_value(value).map_err(|_| ApiError::bad_request())?;
        if request.config.name != stream {
            return Err(ApiError::stream_mismatch());
        }
        let config = serde_json::to_vec(&request.config).expect("a stream config serialises");
        // As nats-server: the config and the account's limits are checked before the
        // upload starts, not after the client has sent the whole backup.
        let checked = StreamConfig::from_request(stream, &config, ConfigPurpose::Create)?;
        self.check_stream_limits(account, stream, &checked)?;
        if self.stream_owner(account, stream).is_some() {
            return Err(name_in_use());
        }
        let count = UPLOAD_COUNT.with(|count| {
            count.set(count.get() + 1);
            count.get()
        });
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let deliver_subject = format!("{RESTORE_PREFIX}{stream}.{count}x{nanos:x}");
        let staging_dir = self.options.store_dir.join(RESTORE_STAGING_DIR);
        std::fs::create_dir_all(&staging_dir)
            .map_err(|error| restore_failed(&format!("staging directory {}: {error}", staging_dir.display())))?;
        let entry_bytes_max = limits::PAYLOAD_BYTES_DEFAULT.max(request.config.max_msg_size.max(0) as usize) as u64;
        let upload = Upload {
            account,
            stream: stream.to_string(),
            config,
            upload: RestoreUpload::new(entry_bytes_max),
            active_at: Instant::now(),
            opened_at: Instant::now(),
            staged: staging_dir.join(format!("{count}x{nanos:x}")),
            file: None,
            written: 0,
            gate: Rc::new(Semaphore::new(1)),
        };
        let account_name = self.options.accounts.name_of(account);
        tracing::info!("Starting restore for stream '{account_name} > {stream}'");
        UPLOADS.with(|uploads| uploads.borrow_mut().insert(deliver_subject.clone(), upload));
        glommio::spawn_local(drop_when_idle(deliver_subject.clone())).detach();
        Ok(RestoreBody { deliver_subject })
    }

    /// One uploaded chunk on the coordinator: checked, staged and acked, or (empty) the end.
    pub(super) async fn restore_chunk_here(self: Rc<Self>, forward: ApiForward) {
        let subject = forward.subject.as_str();
        if transfer_stream(subject, RESTORE_PREFIX).is_none() {
            return;
        }
        let account = forward.account;
        let gate = UPLOADS.with(|uploads| {
            uploads.borrow().get(subject).filter(|upload| upload.account == account).map(|upload| upload.gate.clone())
        });
        let Some(gate) = gate else { return };
        let Ok(_turn) = gate.acquire_permit(1).await else { return };
        let reply = match forward.body.is_empty() {
            false => stage_chunk(subject, account, &forward.body).await,
            true => match UPLOADS.with(|uploads| uploads.borrow_mut().remove(subject)) {
                Some(upload) if upload.account == account => {
                    let staged = upload.staged.clone();
                    let (name, bytes, opened_at) = (upload.stream.clone(), upload.written, upload.opened_at);
                    let reply = self.finish_restore(upload).await;
                    let _ = glommio::io::remove(&staged).await;
                    if !is_error_reply(&reply) {
                        // As nats-server logs it (its sizes in MB of 10^6 bytes).
                        let account_name = self.options.accounts.name_of(account);
                        let (megabytes, elapsed) = (bytes as f64 / 1e6, opened_at.elapsed());
                        tracing::info!(
                            "Completed restore of {megabytes:.2} MB for stream '{account_name} > {name}' in {elapsed:?}"
                        );
                    }
                    Some(reply)
                }
                _ => None,
            },
        };
        if let (Some(reply), Some(to)) = (reply, forward.reply) {
            self.publish_internal(account, &to, None, &reply);
        }
    }

    /// Creates the stream and has its owner store the backup; the stream-create response.
    async fn finish_restore(self: &Rc<Self>, upload: Upload) -> Vec<u8> {
        let Upload { account, stream, config, upload, staged, file, .. } = upload;
        if let Some(mut file) = file {
            // Writes what is still buffered, and sets the file's length to the upload's.
            if let Err(error) = file.close().await {
                let error = restore_failed(&format!("staging the upload: {error}"));
                return encode_reply::<()>(ResponseType::StreamCreate, &Err(error));
            }
        }
        let mut work = match upload.finish() {
            Ok(work) => work,
            Err(error) => return encode_reply::<()>(ResponseType::StreamCreate, &Err(error)),
        };
        work.staged = staged;
        // Created meanwhile: a create with the same config would succeed and be filled.
        if self.stream_owner(account, &stream).is_some() {
            return encode_reply::<()>(ResponseType::StreamCreate, &Err(name_in_use()));
        }
        let created = self.coordinate(account, &stream, &config, Operation::Create).await;
        if is_error_reply(&created) {
            return created;
        }
        let Some(owner) = self.stream_owner(account, &stream) else {
            return encode_reply::<()>(ResponseType::StreamCreate, &Err(restore_failed("stream vanished")));
        };
        match self.call(owner, ShardCall::Restore(account, stream, Box::new(work))).await {
            ShardReturn::Reply { reply, .. } => reply,
            _ => encode_reply::<()>(ResponseType::StreamCreate, &Err(restore_failed("no answer from the owner"))),
        }
    }
}

/// Checks one chunk and appends it to the upload's staging file: the ack (empty), or the
/// refusal that ends the upload.
async fn stage_chunk(subject: &str, account: AccountId, body: &[u8]) -> Option<Vec<u8>> {
    let checked = UPLOADS.with(|uploads| {
        let mut uploads = uploads.borrow_mut();
        let upload = uploads.get_mut(subject).filter(|upload| upload.account == account)?;
        upload.active_at = Instant::now();
        Some(match upload.upload.push(body) {
            Ok(()) => {
                upload.written += body.len() as u64;
                Ok((upload.file.take(), upload.staged.clone()))
            }
            Err(error) => Err(error),
        })
    })?;
    let written = match checked {
        Ok((file, staged)) => write_staged(file, &staged, body).await,
        Err(error) => Err(error),
    };
    match written {
        Ok(file) => {
            UPLOADS.with(|uploads| match uploads.borrow_mut().get_mut(subject) {
                Some(upload) => upload.file = Some(file),
                // Dropped meanwhile (idle): the writer goes with it.
                None => drop(file),
            });
            Some(Vec::new())
        }
        Err(error) => {
            if let Some(upload) = UPLOADS.with(|uploads| uploads.borrow_mut().remove(subject)) {
                let _ = glommio::io::remove(&upload.staged).await;
            }
            Some(encode_reply::<()>(ResponseType::StreamCreate, &Err(error)))
        }
    }
}

/// Hands `body` to the staging file's writer, creating the file for the first chunk; the
/// writer back. Returns once the body is buffered (a write-behind buffer was free), not
/// once it is on disk: a failed write shows at a later chunk or at the end.
async fn write_staged(
    file: Option<DmaStreamWriter>,
    staged: &std::path::Path,
    body: &[u8],
) -> Result<DmaStreamWriter, ApiError> {
    let failed = |error: &dyn std::fmt::Display| restore_failed(&format!("staging the upload: {error}"));
    let mut file = match file {
        Some(file) => file,
        None => {
            let file = DmaFile::create(staged).await.map_err(|error| failed(&error))?;
            DmaStreamWriterBuilder::new(file)
                .with_buffer_size(STAGING_BUFFER_BYTES)
                .with_write_behind(STAGING_WRITE_BEHIND)
                // Scratch: a crash empties the staging directory at the next start.
                .with_sync_on_close_disabled(true)
                .build()
        }
    };
    file.write_all(body).await.map_err(|error| failed(&error))?;
    Ok(file)
}

/// Drops the upload and its staging file once no chunk came for `UPLOAD_IDLE_MAX`;
/// nothing was created yet.
async fn drop_when_idle(subject: String) {
    loop {
        glommio::timer::sleep(UPLOAD_IDLE_MAX).await;
        let (idle, dropped) = UPLOADS.with(|uploads| {
            let mut uploads = uploads.borrow_mut();
            let idle = uploads.get(&subject).map(|upload| upload.active_at.elapsed() >= UPLOAD_IDLE_MAX);
            let dropped = if idle == Some(true) { uploads.remove(&subject) } else { None };
            (idle, dropped)
        });
        if let Some(upload) = dropped {
            let _ = glommio::io::remove(&upload.staged).await;
        }
        if idle != Some(false) {
            return;
        }
    }
}

/// nats-server's 10130.
fn name_in_use() -> ApiError {
    ApiError::new(400, 10130, "stream name already in use, cannot restore")
}
