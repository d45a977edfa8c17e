//! `STREAM.RESTORE` on the mesh. The request and every uploaded chunk go to the
//! coordinator (shard 0), which holds the upload, checks each chunk as it arrives and
//! acks it; the empty message ends the upload: the coordinator creates the stream (the
//! same serialised path as `STREAM.CREATE`), and its owner stores the backup and answers
//! with the stream's info.
//!
//! Uploads in progress are the coordinator's alone: a thread-local table by upload id.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::account::AccountId;
use super::envelope::{ApiForward, Envelope, ShardCall, ShardReturn};
use super::jetstream_routing::{Operation, COORDINATOR};
use super::node::Node;
use super::router::Publish;
use crate::jetstream::backup_api::{transfer_stream, RestoreBody, RestoreRequest, RESTORE_PREFIX};
use crate::jetstream::errors::ApiError;
use crate::jetstream::request::parse_body;
use crate::jetstream::responses::{encode_reply, is_error_reply, ResponseType};
use crate::jetstream::service::{restore_failed, RestoreUpload};
use crate::limits;

/// One upload: whose, into which stream, with which config, and what has arrived.
struct Upload {
    account: AccountId,
    stream: String,
    config: Vec<u8>,
    upload: RestoreUpload,
    /// When the last chunk arrived: an upload idle for `UPLOAD_IDLE_MAX` is dropped.
    active_at: Instant,
}

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
        if self.stream_owner(account, stream).is_some() {
            return Err(name_in_use());
        }
        let config = serde_json::to_vec(&request.config).expect("a stream config serialises");
        let count = UPLOAD_COUNT.with(|count| {
            count.set(count.get() + 1);
            count.get()
        });
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let deliver_subject = format!("{RESTORE_PREFIX}{stream}.{count}x{nanos:x}");
        let entry_bytes_max = limits::PAYLOAD_BYTES_DEFAULT.max(request.config.max_msg_size.max(0) as usize) as u64;
        let upload = Upload {
            account,
            stream: stream.to_string(),
            config,
            upload: RestoreUpload::new(entry_bytes_max),
            active_at: Instant::now(),
        };
        UPLOADS.with(|uploads| uploads.borrow_mut().insert(deliver_subject.clone(), upload));
        glommio::spawn_local(drop_when_idle(deliver_subject.clone())).detach();
        Ok(RestoreBody { deliver_subject })
    }

    /// One uploaded chunk on the coordinator: checked and acked, or (empty) the end.
    pub(super) async fn restore_chunk_here(self: Rc<Self>, forward: ApiForward) {
        let subject = forward.subject.as_str();
        if transfer_stream(subject, RESTORE_PREFIX).is_none() {
            return;
        }
        let account = forward.account;
        let reply = match forward.body.is_empty() {
            false => UPLOADS.with(|uploads| {
                let mut uploads = uploads.borrow_mut();
                let upload = uploads.get_mut(subject).filter(|upload| upload.account == account)?;
                upload.active_at = Instant::now();
                match upload.upload.push(&forward.body) {
                    Ok(()) => Some(Vec::new()),
                    Err(error) => {
                        uploads.remove(subject);
                        Some(encode_reply::<()>(ResponseType::StreamCreate, &Err(error)))
                    }
                }
            }),
            true => match UPLOADS.with(|uploads| uploads.borrow_mut().remove(subject)) {
                Some(upload) if upload.account == account => Some(self.finish_restore(upload).await),
                _ => None,
            },
        };
        if let (Some(reply), Some(to)) = (reply, forward.reply) {
            self.publish_internal(account, &to, None, &reply);
        }
    }

    /// Creates the stream and has its owner store the backup; the stream-create response.
    async fn finish_restore(self: &Rc<Self>, upload: Upload) -> Vec<u8> {
        let Upload { account, stream, config, upload, .. } = upload;
        let work = match upload.finish() {
            Ok(work) => work,
            Err(error) => return encode_reply::<()>(ResponseType::StreamCreate, &Err(error)),
        };
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

/// Drops the upload once no chunk came for `UPLOAD_IDLE_MAX`; nothing was created yet.
async fn drop_when_idle(subject: String) {
    loop {
        glommio::timer::sleep(UPLOAD_IDLE_MAX).await;
        let idle = UPLOADS.with(|uploads| {
            let mut uploads = uploads.borrow_mut();
            let idle = uploads.get(&subject).map(|upload| upload.active_at.elapsed() >= UPLOAD_IDLE_MAX);
            if idle == Some(true) {
                uploads.remove(&subject);
            }
            idle
        });
        if idle != Some(false) {
            return;
        }
    }
}

/// nats-server's 10130.
fn name_in_use() -> ApiError {
    ApiError::new(400, 10130, "stream name already in use, cannot restore")
}
