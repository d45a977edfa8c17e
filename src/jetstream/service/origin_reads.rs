//! The origin's side of a mirror or source: a follower on any shard asks the shard that
//! owns the origin stream for the next messages (`read_origin`). The answer holds only
//! durable messages (what consumers may see, `consumers::visible_last`), so a crash of
//! the origin can never take back something a mirror already copied. With nothing new,
//! the read waits for the next append (a long poll) up to the request's `wait`.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::task::{Poll, Waker};
use std::time::Duration;

use bytes::Bytes;

use super::StreamService;
use crate::jetstream::errors::ApiError;
use crate::stream::Stream;

/// Wakers beyond this are woken and dropped: spurious wakes are harmless, a waiter
/// re-checks, and it keeps timed-out reads from piling up wakers on an idle shard.
const ORIGIN_WAITERS_MAX: usize = 256;

/// Where a follower reads from next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginStart {
    /// The first message at or after this sequence.
    Seq(u64),
    /// The first message stored at or after this time (Unix nanoseconds).
    Time(i64),
}

#[derive(Clone, Debug)]
pub struct OriginRequest {
    pub stream: String,
    pub start: OriginStart,
    /// Subjects to copy; empty: all.
    pub filters: Vec<String>,
    pub max_msgs: usize,
    pub max_bytes: usize,
    /// How long to wait for a message when there is none yet.
    pub wait: Duration,
    /// Names the follower (its stream and link), for retention (`followers.rs`).
    pub follower: String,
    /// The last origin sequence the follower stored durably (its ack).
    pub acked: u64,
}

#[derive(Clone, Debug)]
pub struct OriginMessage {
    pub seq: u64,
    pub timestamp_ns: i64,
    pub subject: String,
    pub headers: Bytes,
    pub payload: Bytes,
}

#[derive(Clone, Debug, Default)]
pub struct OriginBatch {
    pub messages: Vec<OriginMessage>,
    /// Where the next read starts (past messages the filters skipped).
    pub next_seq: u64,
    /// Matching durable messages after this batch (the follower's lag).
    pub pending: u64,
    /// Names this incarnation of the origin (a stream deleted and created again gets
    /// another), for the `Nats-Stream-Source` header.
    pub ident: String,
}

pub type OriginReply = Result<OriginBatch, ApiError>;

/// Appends seen by followers waiting on this shard's streams.
#[derive(Default)]
pub struct OriginWatch {
    appends: Cell<u64>,
    waiters: RefCell<Vec<Waker>>,
}

impl OriginWatch {
    /// A counter that changes on every append (see `changed_since`).
    fn appends(&self) -> u64 {
        self.appends.get()
    }
}

impl OriginWatch {
    /// Something was stored durably (or a stream went away): waiting reads look again.
    pub fn notify(&self) {
        self.appends.set(self.appends.get().wrapping_add(1));
        for waker in self.waiters.borrow_mut().drain(..) {
            waker.wake();
        }
    }

    async fn changed_since(&self, seen: u64) {
        poll_fn(|cx| {
            if self.appends.get() != seen {
                return Poll::Ready(());
            }
            let mut waiters = self.waiters.borrow_mut();
            if waiters.len() >= ORIGIN_WAITERS_MAX {
                for waker in waiters.drain(..) {
                    waker.wake();
                }
            }
            waiters.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

impl StreamService {
    /// The next durable messages of origin stream `request.stream` (owned here).
    pub async fn read_origin(&self, request: OriginRequest) -> OriginReply {
        let deadline = std::time::Instant::now() + request.wait;
        self.follower_acked(&request).await;
        loop {
            let seen = self.sourcing.watch.appends();
            let stream = self.engine.stream(&request.stream).map_err(|_| ApiError::stream_not_found())?;
            let batch = self.origin_batch(&stream, &request).await?;
            let now = std::time::Instant::now();
            if !batch.messages.is_empty() || now >= deadline {
                return Ok(batch);
            }
            let sleep = glommio::timer::sleep(deadline - now);
            futures_lite::future::or(self.sourcing.watch.changed_since(seen), sleep).await;
        }
    }

    async fn origin_batch(&self, stream: &Stream, request: &OriginRequest) -> OriginReply {
        let visible_last = self.consumers.visible_last_of(stream);
        let mut seq = match request.start {
            OriginStart::Seq(seq) => seq.max(1),
            OriginStart::Time(nanos) => stream.seq_at_time(nanos),
        };
        let mut batch = OriginBatch { ident: origin_ident(stream), ..OriginBatch::default() };
        let mut bytes = 0;
        while batch.messages.len() < request.max_msgs && bytes < request.max_bytes {
            let Some(summary) = stream.next_matching(seq, visible_last, &request.filters) else {
                seq = seq.max(visible_last + 1);
                break;
            };
            seq = summary.seq + 1;
            let message = match stream.get(summary.seq).await {
                Ok(message) => message,
                // Removed meanwhile (limits, purge): nothing to copy there.
                Err(crate::stream::Error::NoMessageFound) => continue,
                Err(error) => return Err(ApiError::stream_store_failed(error.to_string())),
            };
            bytes += message.headers.len() + message.payload.len();
            batch.messages.push(OriginMessage {
                seq: message.seq,
                timestamp_ns: message.timestamp_ns,
                subject: message.subject,
                headers: message.headers,
                payload: message.payload,
            });
        }
        batch.next_seq = seq;
        batch.pending = stream.count_matching(seq, visible_last, &request.filters);
        Ok(batch)
    }
}

/// Eight characters naming the origin's incarnation (its name and creation time).
fn origin_ident(stream: &Stream) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut hash = crate::stream::meta::stream_id_for(&stream.name(), stream.created_ns());
    (0..8)
        .map(|_| {
            let c = ALPHABET[(hash % 64) as usize] as char;
            hash /= 64;
            c
        })
        .collect()
}
