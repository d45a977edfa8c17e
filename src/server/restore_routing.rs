//! `STREAM.RESTORE` on the mesh. The coordinator (shard 0) answers the request: it checks
//! the config and the account's limits, and has the shard that will own the stream
//! (`placement::shard_for`) open the upload there. The upload's subject names that shard
//! (`<prefix><stream>.<owner>x<count>x<nanos>`), so every chunk goes straight to it,
//! from whichever shard the client's connection is on.
//!
//! On the owner, each chunk is acked once queued; a task of the upload's own decodes,
//! checks and stores the queued chunks, in order, into an unlisted stream
//! (`service::restore`), while the client sends the next. The queue is short
//! (`CHUNKS_QUEUED_MAX`), so a client faster than the storing waits for its acks and
//! memory holds a few chunks whatever the backup's size. The empty message ends the
//! upload: the owner makes the stream durable, asks the coordinator to adopt it (the name
//! and subjects are checked again, serialised with `STREAM.CREATE`), creates the backup's
//! consumers and answers with the stream's info. A refused chunk, a refused adoption and
//! an upload idle for `UPLOAD_IDLE_MAX` each remove the unlisted stream; a crash leaves
//! it in `STORE_DIR/restore-staging/`, which is emptied at start.
//!
//! Uploads in progress are their owner's alone: a thread-local table by upload subject.
//! Each upload's chunks are taken one at a time (its `gate`), in the order they arrived.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use glommio::channels::local_channel::{self, LocalSender};
use glommio::sync::Semaphore;
use glommio::task::JoinHandle;

use super::account::AccountId;
use super::catalog::CatalogChange;
use super::envelope::{ApiForward, Envelope, ShardCall, ShardReturn};
use super::jetstream_routing::{check_subject_rules, COORDINATOR};
use super::node::Node;
use super::router::Publish;
use crate::jetstream::backup_api::{transfer_stream, RestoreBody, RestoreRequest, RESTORE_PREFIX};
use crate::jetstream::errors::ApiError;
use crate::jetstream::request::parse_body;
use crate::jetstream::responses::{encode_reply, is_error_reply, ResponseType};
use crate::jetstream::service::{restore_failed, RestoreInto, RestoredStream, RESTORE_STAGING_DIR};
use crate::jetstream::stream_config::{ConfigPurpose, StreamConfig};
use crate::limits;
use crate::shard::{placement, ShardId};

/// What the coordinator asks the owner to open.
#[derive(Debug)]
pub struct OpenRestore {
    owner: ShardId,
    stream: String,
    config: StreamConfig,
    subject: String,
    entry_bytes_max: u64,
}

/// What the owner asks the coordinator to adopt, once stored.
#[derive(Debug)]
pub struct AdoptRestore {
    /// The shard that stored it.
    owner: ShardId,
    stream: String,
    /// The config as the request gave it, checked again against the catalog.
    config: Vec<u8>,
    subject: String,
}

/// The storing task's outcome: the upload's stream, and whether every chunk was stored.
type Stored = (RestoreInto, Result<(), ApiError>);

/// One upload on its owner.
struct Upload {
    account: AccountId,
    stream: String,
    config: Vec<u8>,
    /// Chunks acked, waiting for the storing task; closed at the end.
    chunks: Rc<LocalSender<Bytes>>,
    storing: JoinHandle<Stored>,
    /// Set by the storing task when a chunk is refused: later chunks are answered with it.
    refused: Rc<RefCell<Option<ApiError>>>,
    /// When the last chunk arrived: an upload idle for `UPLOAD_IDLE_MAX` is dropped.
    active_at: Instant,
    opened_at: Instant,
    bytes: u64,
    /// One chunk (or the end) at a time.
    gate: Rc<Semaphore>,
}

/// Chunks acked but not yet stored, at most (128 KiB each by default).
const CHUNKS_QUEUED_MAX: usize = 8;

/// How long an upload may go without a chunk (nats-server: 5 s).
const UPLOAD_IDLE_MAX: Duration = Duration::from_secs(5);

thread_local! {
    static UPLOADS: RefCell<HashMap<String, Upload>> = RefCell::new(HashMap::new());
    /// Stored uploads waiting for the coordinator's adoption, by upload subject.
    static STORED: RefCell<HashMap<String, RestoredStream>> = RefCell::new(HashMap::new());
    static UPLOAD_COUNT: Cell<u64> = const { Cell::new(0) };
}

/// True for a restore's upload subject.
pub fn is_restore_subject(subject: &[u8]) -> bool {
    subject.starts_with(RESTORE_PREFIX.as_bytes())
}

/// The shard an upload subject names as its owner.
fn upload_owner(subject: &str) -> Option<ShardId> {
    let stream = transfer_stream(subject, RESTORE_PREFIX)?;
    let key = &subject[RESTORE_PREFIX.len() + stream.len() + 1..];
    key.split('x').next()?.parse().ok().map(ShardId)
}

impl Node {
    /// Routes an uploaded chunk to the upload's owner; false (no responders) for a
    /// subject that names none.
    pub(super) fn route_restore_chunk(self: &Rc<Self>, account: AccountId, publish: &Publish<'_>) -> bool {
        let Ok(subject) = std::str::from_utf8(publish.subject) else { return false };
        let Some(owner) = upload_owner(subject).filter(|owner| owner.0 < self.shard_count()) else { return false };
        let forward = ApiForward {
            account,
            subject: subject.to_string(),
            reply: publish.reply.map(Bytes::copy_from_slice),
            body: Bytes::copy_from_slice(publish.payload),
        };
        if owner == self.shard {
            let node = self.clone();
            glommio::spawn_local(async move { node.restore_chunk_here(forward).await }).detach();
        } else {
            self.send(owner, Envelope::Api(Box::new(forward)));
        }
        true
    }

    /// Answers `STREAM.RESTORE` on the coordinator: the upload subject, or nats-server's
    /// refusal (bad request, name mismatch, stream exists).
    pub(super) async fn answer_restore(self: &Rc<Self>, account: AccountId, stream: &str, body: &[u8]) -> Vec<u8> {
        let open = match self.check_restore(account, stream, body) {
            Ok(open) => open,
            Err(error) => return encode_reply::<()>(ResponseType::StreamRestore, &Err(error)),
        };
        let (deliver_subject, owner) = (open.subject.clone(), open.owner);
        match self.call(owner, ShardCall::OpenRestore(account, Box::new(open))).await {
            ShardReturn::Reply { reply, .. } if reply.is_empty() => {
                encode_reply(ResponseType::StreamRestore, &Ok::<_, ApiError>(RestoreBody { deliver_subject }))
            }
            ShardReturn::Reply { reply, .. } => reply,
            _ => encode_reply::<()>(ResponseType::StreamRestore, &Err(restore_failed("no answer from the owner"))),
        }
    }

    fn check_restore(&self, account: AccountId, stream: &str, body: &[u8]) -> Result<OpenRestore, ApiError> {
        let value = parse_body(body)?.ok_or_else(ApiError::bad_request)?;
        let request: RestoreRequest = serde_json::from_value(value).map_err(|_| ApiError::bad_request())?;
        if request.config.name != stream {
            return Err(ApiError::stream_mismatch());
        }
        let config = serde_json::to_vec(&request.config).expect("a stream config serialises");
        // As nats-server: the config and the account's limits are checked before the
        // upload starts, not after the client has sent the whole backup.
        let checked = StreamConfig::from_request(stream, &config, ConfigPurpose::Create)?;
        check_subject_rules(&checked)?;
        self.check_stream_limits(account, stream, &checked)?;
        if self.stream_owner(account, stream).is_some() {
            return Err(name_in_use());
        }
        let count = UPLOAD_COUNT.with(|count| {
            count.set(count.get() + 1);
            count.get()
        });
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let owner = placement::shard_for(stream, self.shard_count());
        let subject = format!("{RESTORE_PREFIX}{stream}.{}x{count}x{nanos:x}", owner.0);
        let entry_bytes_max = limits::PAYLOAD_BYTES_DEFAULT.max(request.config.max_msg_size.max(0) as usize) as u64;
        Ok(OpenRestore { owner, stream: stream.to_string(), config: checked, subject, entry_bytes_max })
    }

    /// Opens an upload on its owner: its unlisted stream and its storing task. The
    /// reply is empty, or the restore request's refusal.
    pub(super) async fn open_restore_here(self: &Rc<Self>, account: AccountId, open: OpenRestore) -> Vec<u8> {
        let refuse = |error: ApiError| encode_reply::<()>(ResponseType::StreamRestore, &Err(error));
        let Some(service) = self.jetstream.get(account).cloned() else {
            return refuse(restore_failed("JetStream not enabled for the account"));
        };
        let OpenRestore { stream, config, subject, entry_bytes_max, .. } = open;
        let staging_dir = self.options.store_dir.join(RESTORE_STAGING_DIR);
        if let Err(error) = std::fs::create_dir_all(&staging_dir) {
            return refuse(restore_failed(&format!("staging directory {}: {error}", staging_dir.display())));
        }
        let key = &subject[subject.rfind('.').map_or(0, |dot| dot + 1)..];
        let request_config = serde_json::to_vec(&config).expect("a stream config serialises");
        let into = match service.restore_begin(config, &staging_dir.join(key), entry_bytes_max).await {
            Ok(into) => into,
            Err(error) => return refuse(error),
        };
        let (chunks, receiver) = local_channel::new_bounded::<Bytes>(CHUNKS_QUEUED_MAX);
        let refused = Rc::new(RefCell::new(None));
        let storing = {
            let refused = refused.clone();
            glommio::spawn_local(async move {
                let mut into = into;
                let mut outcome = Ok(());
                // Refused chunks are still taken (and dropped), so a sender never waits
                // on a queue nobody reads.
                while let Some(chunk) = receiver.recv().await {
                    // The chunk's ack was queued after it, and the writer woken after this
                    // task: it goes first, so the client sends the next chunk while this one
                    // is stored. A cooperative yield, not a reactor turn.
                    futures_lite::future::yield_now().await;
                    if outcome.is_ok() {
                        outcome = into.push(&chunk).await;
                        if let Err(error) = &outcome {
                            *refused.borrow_mut() = Some(error.clone());
                        }
                    }
                }
                (into, outcome)
            })
            .detach()
        };
        let account_name = self.options.accounts.name_of(account);
        tracing::info!("Starting restore for stream '{account_name} > {stream}'");
        let upload = Upload {
            account,
            stream,
            config: request_config,
            chunks: Rc::new(chunks),
            storing,
            refused,
            active_at: Instant::now(),
            opened_at: Instant::now(),
            bytes: 0,
            gate: Rc::new(Semaphore::new(1)),
        };
        UPLOADS.with(|uploads| uploads.borrow_mut().insert(subject.clone(), upload));
        glommio::spawn_local(drop_when_idle(self.clone(), subject)).detach();
        Vec::new()
    }

    /// One uploaded chunk on its owner: queued and acked, or (empty) the end.
    pub(super) async fn restore_chunk_here(self: Rc<Self>, forward: ApiForward) {
        let subject = forward.subject.as_str();
        let account = forward.account;
        let gate = UPLOADS.with(|uploads| {
            uploads.borrow().get(subject).filter(|upload| upload.account == account).map(|upload| upload.gate.clone())
        });
        let Some(gate) = gate else { return };
        let Ok(_turn) = gate.acquire_permit(1).await else { return };
        let reply = match forward.body.is_empty() {
            false => self.queue_chunk(subject, forward.body).await,
            true => {
                let upload = UPLOADS.with(|uploads| {
                    let mut uploads = uploads.borrow_mut();
                    uploads
                        .get(subject)
                        .is_some_and(|upload| upload.account == account)
                        .then(|| uploads.remove(subject))
                });
                // Boxed: the end's future (store, adopt, checkpoint) is large, and inline it
                // made every chunk's task as large, copied at each spawn (perf/backup.md).
                match upload.flatten() {
                    Some(upload) => Some(Box::pin(self.finish_upload(subject, upload)).await),
                    None => None,
                }
            }
        };
        if let (Some(reply), Some(to)) = (reply, forward.reply) {
            self.publish_internal(account, &to, None, &reply);
        }
    }

    /// Queues a chunk for the storing task: the ack (empty), or the refusal that ends the
    /// upload.
    async fn queue_chunk(&self, subject: &str, body: Bytes) -> Option<Vec<u8>> {
        let (chunks, refused) = UPLOADS.with(|uploads| {
            let mut uploads = uploads.borrow_mut();
            let upload = uploads.get_mut(subject)?;
            upload.active_at = Instant::now();
            upload.bytes += body.len() as u64;
            let refused = upload.refused.borrow().clone();
            Some((upload.chunks.clone(), refused))
        })?;
        let refused = match refused {
            Some(error) => Some(error),
            None => match chunks.send(body).await {
                // Queued: the wait for room counts as activity, not idleness.
                Ok(()) => UPLOADS.with(|uploads| match uploads.borrow_mut().get_mut(subject) {
                    Some(upload) => {
                        upload.active_at = Instant::now();
                        None
                    }
                    None => Some(restore_failed("the upload was dropped")),
                }),
                Err(_) => Some(restore_failed("the upload was dropped")),
            },
        };
        // The queue closes only once every sender is gone.
        drop(chunks);
        let Some(error) = refused else { return Some(Vec::new()) };
        if let Some(upload) = UPLOADS.with(|uploads| uploads.borrow_mut().remove(subject)) {
            self.drop_upload(upload).await;
        }
        Some(encode_reply::<()>(ResponseType::StreamCreate, &Err(error)))
    }

    /// Ends an upload: the rest stored and made durable, the stream adopted, its
    /// consumers created; the restore's answer.
    async fn finish_upload(self: &Rc<Self>, subject: &str, upload: Upload) -> Vec<u8> {
        let Upload { account, stream, config, chunks, storing, bytes, opened_at, .. } = upload;
        let Some(service) = self.jetstream.get(account).cloned() else {
            return encode_reply::<()>(ResponseType::StreamCreate, &Err(restore_failed("JetStream is not enabled")));
        };
        drop(chunks);
        let restored = match storing.await {
            Some((into, Ok(()))) => match into.finish().await {
                Ok(restored) => restored,
                Err((error, unlisted)) => {
                    service.restore_discard(unlisted).await;
                    return encode_reply::<()>(ResponseType::StreamCreate, &Err(error));
                }
            },
            Some((into, Err(error))) => {
                service.restore_discard(into.into_unlisted()).await;
                return encode_reply::<()>(ResponseType::StreamCreate, &Err(error));
            }
            None => return encode_reply::<()>(ResponseType::StreamCreate, &Err(restore_failed("storing stopped"))),
        };
        let consumers = restored.consumers.clone();
        STORED.with(|stored| stored.borrow_mut().insert(subject.to_string(), restored));
        let adoption = AdoptRestore { owner: self.shard, stream: stream.clone(), config, subject: subject.to_string() };
        let reply = match self.call(COORDINATOR, ShardCall::AdoptRestore(account, Box::new(adoption))).await {
            ShardReturn::Reply { reply, .. } => reply,
            _ => encode_reply::<()>(ResponseType::StreamCreate, &Err(restore_failed("no answer from the coordinator"))),
        };
        // Refused before the owner was asked to adopt it: still here, to remove.
        if let Some(restored) = STORED.with(|stored| stored.borrow_mut().remove(subject)) {
            service.restore_discard(restored.into_unlisted()).await;
        }
        if is_error_reply(&reply) {
            return reply;
        }
        let reply = service.restore_consumers(&stream, &consumers).await;
        if !is_error_reply(&reply) {
            // As nats-server logs it (its sizes in MB of 10^6 bytes).
            let account_name = self.options.accounts.name_of(account);
            let (megabytes, elapsed) = (bytes as f64 / 1e6, opened_at.elapsed());
            tracing::info!(
                "Completed restore of {megabytes:.2} MB for stream '{account_name} > {stream}' in {elapsed:?}"
            );
        }
        reply
    }

    /// The coordinator's part in ending a restore: the name and subjects checked again
    /// against the catalog, under the same lock as `STREAM.CREATE`, then the owner adopts
    /// the stored stream; the create reply.
    pub(super) async fn coordinate_adoption(self: &Rc<Self>, account: AccountId, adoption: AdoptRestore) -> Vec<u8> {
        // Boxed: the adoption calls the owner, through `call` again.
        Box::pin(self.under_coordinator_lock(self.adopt_locked(account, adoption))).await
    }

    async fn adopt_locked(self: &Rc<Self>, account: AccountId, adoption: AdoptRestore) -> Vec<u8> {
        let AdoptRestore { owner, stream, config, subject } = adoption;
        // As nats-server words a stream it cannot add at the end of a restore.
        let refuse = |error: ApiError| {
            let detail = format!("error adding stream: {} ({})", error.description, error.err_code);
            encode_reply::<()>(ResponseType::StreamCreate, &Err(restore_failed(&detail)))
        };
        if self.stream_owner(account, &stream).is_some() {
            return refuse(name_in_use());
        }
        if let Err(error) = self.checked_for(account, &stream, &config, ConfigPurpose::Create).await {
            return refuse(error);
        }
        match self.call(owner, ShardCall::AdoptRestored(account, subject)).await {
            ShardReturn::Reply { reply, change } => {
                if let Some(change) = change {
                    self.broadcast_catalog(change);
                }
                reply
            }
            _ => encode_reply::<()>(ResponseType::StreamCreate, &Err(restore_failed("no answer from the owner"))),
        }
    }

    /// The owner's part: the stored upload becomes the stream of its name.
    pub(super) async fn adopt_restored_here(self: &Rc<Self>, account: AccountId, subject: &str) -> ShardReturn {
        let Some(restored) = STORED.with(|stored| stored.borrow_mut().remove(subject)) else {
            let reply = encode_reply::<()>(ResponseType::StreamCreate, &Err(restore_failed("nothing stored")));
            return ShardReturn::Reply { reply, change: None };
        };
        let Some(service) = self.jetstream.get(account).cloned() else {
            return ShardReturn::Reply { reply: Vec::new(), change: None };
        };
        let name = restored.name().to_string();
        let (reply, adopted) = service.adopt_restored(restored).await;
        if !adopted {
            return ShardReturn::Reply { reply, change: None };
        }
        self.follow_sources(account, &name);
        let summary = service.summaries().into_iter().find(|summary| summary.name == name);
        let change = summary.map(|summary| CatalogChange::Upsert(self.catalog_entry(account, summary)));
        ShardReturn::Reply { reply, change }
    }

    /// Drops an upload: its queue closed, its storing task awaited and its stream removed.
    async fn drop_upload(&self, upload: Upload) {
        let Upload { account, chunks, storing, .. } = upload;
        drop(chunks);
        if let (Some((into, _)), Some(service)) = (storing.await, self.jetstream.get(account).cloned()) {
            service.restore_discard(into.into_unlisted()).await;
        }
    }
}

/// Drops the upload and its stream once no chunk came for `UPLOAD_IDLE_MAX`; nothing was
/// created yet.
async fn drop_when_idle(node: Rc<Node>, subject: String) {
    loop {
        glommio::timer::sleep(UPLOAD_IDLE_MAX).await;
        let (idle, dropped) = UPLOADS.with(|uploads| {
            let mut uploads = uploads.borrow_mut();
            let idle = uploads.get(&subject).map(|upload| upload.active_at.elapsed() >= UPLOAD_IDLE_MAX);
            let dropped = if idle == Some(true) { uploads.remove(&subject) } else { None };
            (idle, dropped)
        });
        if let Some(upload) = dropped {
            node.drop_upload(upload).await;
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
