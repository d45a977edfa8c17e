//! Atomic batch publish (ADR-50), the service's half: staging a batch's messages until
//! its commit, as nats-server 2.15.1 answers (recorded): a message that starts or
//! continues a batch gets an empty reply; the commit (`Nats-Batch-Commit: 1`, or `eob`:
//! commit without storing that message) gets one pub ack for the batch, with `batch` and
//! `count`. A gap, a restart, a missing or bad sequence, a bad commit value, an
//! unsupported header or a batch past [`BATCH_MESSAGES_MAX`] abandons the batch with its
//! error; so does [`BATCH_IDLE_TIMEOUT`] without a message (silently). Nothing of an
//! abandoned batch is stored. Committing is the stream's (`stream/batch.rs`).
//!
//! Batches live on the shard that owns the stream (every message of a stream reaches that
//! shard, in order), in memory: a restart loses uncommitted batches, as nats-server's
//! single-server mode does with its in-memory batch stores for memory streams.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::jetstream::errors::ApiError;
use crate::stream::BatchMessage;

/// Messages in one batch at most (nats-server's default `max_msgs`).
pub const BATCH_MESSAGES_MAX: usize = 1000;
/// Open batches per stream at most (nats-server's `max_inflight_per_stream`).
pub const BATCHES_PER_STREAM_MAX: usize = 50;
/// A batch without a message this long is abandoned (nats-server's `timeout`).
pub const BATCH_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest batch id (recorded: 64 bytes pass, 65 are 10179).
pub const BATCH_ID_BYTES_MAX: usize = 64;

const BATCH_ID: &str = "Nats-Batch-Id";
const BATCH_SEQUENCE: &str = "Nats-Batch-Sequence";
const BATCH_COMMIT: &str = "Nats-Batch-Commit";
/// Headers nats-server 2.15.1 refuses inside a batch.
const UNSUPPORTED_HEADERS: [&str; 1] = ["Nats-Expected-Last-Msg-Id"];

/// What staging one batch message led to.
pub enum Staged {
    /// Part of an open batch: answer with an empty reply.
    More,
    /// The batch is complete: store these, all or nothing.
    Commit { id: String, messages: Vec<BatchMessage> },
}

struct OpenBatch {
    next_seq: u64,
    messages: Vec<BatchMessage>,
    last_seen: Instant,
}

/// The open batches of one shard's streams, by (stream, batch id).
#[derive(Default)]
pub struct OpenBatches {
    batches: HashMap<(String, String), OpenBatch>,
}

impl OpenBatches {
    /// Whether no batch is open (maintenance need not run to abandon one).
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// Stages a message carrying `Nats-Batch-Id: id` for `stream` (which allows atomic
    /// publish). An error abandons the batch.
    pub fn stage(
        &mut self,
        stream: &str,
        id: &str,
        subject: &str,
        headers: &[u8],
        payload: &[u8],
    ) -> Result<Staged, ApiError> {
        let key = (stream.to_string(), id.to_string());
        let staged = self.stage_inner(&key, subject, headers, payload);
        if staged.is_err() {
            self.batches.remove(&key);
        }
        staged
    }

    fn stage_inner(
        &mut self,
        key: &(String, String),
        subject: &str,
        headers: &[u8],
        payload: &[u8],
    ) -> Result<Staged, ApiError> {
        if key.1.is_empty() || key.1.len() > BATCH_ID_BYTES_MAX {
            return Err(ApiError::atomic_publish_invalid_batch_id());
        }
        let seq = header(headers, BATCH_SEQUENCE)
            .and_then(|value| value.parse::<u64>().ok())
            .ok_or_else(ApiError::atomic_publish_missing_seq)?;
        if let Some(name) = UNSUPPORTED_HEADERS.iter().find(|name| header(headers, name).is_some()) {
            return Err(ApiError::atomic_publish_unsupported_header(name));
        }
        let commit = match header(headers, BATCH_COMMIT) {
            None => None,
            Some(value @ ("1" | "eob")) => Some(value),
            Some(_) => return Err(ApiError::atomic_publish_invalid_batch_commit()),
        };
        if seq == 1 {
            let open_here = self.batches.keys().filter(|(stream, _)| *stream == key.0).count();
            if self.batches.contains_key(key) || open_here >= BATCHES_PER_STREAM_MAX {
                return Err(ApiError::atomic_publish_incomplete_batch());
            }
            self.batches
                .insert(key.clone(), OpenBatch { next_seq: 1, messages: Vec::new(), last_seen: Instant::now() });
        }
        let batch = self
            .batches
            .get_mut(key)
            .filter(|batch| batch.next_seq == seq)
            .ok_or_else(ApiError::atomic_publish_incomplete_batch)?;
        batch.next_seq += 1;
        batch.last_seen = Instant::now();
        if commit != Some("eob") {
            if batch.messages.len() >= BATCH_MESSAGES_MAX {
                return Err(ApiError::atomic_publish_too_large_batch(BATCH_MESSAGES_MAX));
            }
            batch.messages.push(BatchMessage {
                subject: subject.to_string(),
                captured: None,
                headers: headers.to_vec(),
                payload: payload.to_vec(),
            });
        }
        let Some(commit) = commit else { return Ok(Staged::More) };
        let mut batch = self.batches.remove(key).expect("batch staged above");
        let last = batch.messages.last_mut().ok_or_else(ApiError::atomic_publish_incomplete_batch)?;
        if commit == "eob" {
            // As nats-server: the last stored message carries the commit.
            last.headers = with_commit_header(&last.headers);
        }
        Ok(Staged::Commit { id: key.1.clone(), messages: batch.messages })
    }

    /// Abandons batches idle for [`BATCH_IDLE_TIMEOUT`], and every batch of a stream
    /// that no longer allows them (`allowed` is false) or is gone. Returns the (stream,
    /// batch id) of those that timed out (nats-server advises them: `timeout`).
    pub fn abandon_idle(&mut self, allowed: impl Fn(&str) -> bool) -> Vec<(String, String)> {
        let now = Instant::now();
        let mut timed_out = Vec::new();
        self.batches.retain(|(stream, id), batch| {
            let allowed = allowed(stream);
            let keep = allowed && now.duration_since(batch.last_seen) < BATCH_IDLE_TIMEOUT;
            if !keep {
                tracing::debug!(stream, batch = id, "abandoning atomic batch");
            }
            if allowed && !keep {
                timed_out.push((stream.clone(), id.clone()));
            }
            keep
        });
        timed_out
    }
}

/// Why nats-server 2.15.1 advises a batch abandoned after a staging error (`incomplete`
/// for a gap, `large` past [`BATCH_MESSAGES_MAX`]); other refusals drop the batch
/// without an advisory, as it does.
pub fn abandon_reason(error: &ApiError) -> Option<&'static str> {
    if *error == ApiError::atomic_publish_incomplete_batch() {
        Some("incomplete")
    } else if *error == ApiError::atomic_publish_too_large_batch(BATCH_MESSAGES_MAX) {
        Some("large")
    } else {
        None
    }
}

/// The value of header `name` in a raw header block, if present.
pub fn header<'a>(block: &'a [u8], name: &str) -> Option<&'a str> {
    let text = std::str::from_utf8(block).ok()?;
    text.split("\r\n").skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// The batch id a publish carries, if it is a batch message.
pub fn batch_id(headers: &[u8]) -> Option<&str> {
    if headers.is_empty() {
        return None;
    }
    header(headers, BATCH_ID)
}

/// `block` with `Nats-Batch-Commit: 1` as its last header.
fn with_commit_header(block: &[u8]) -> Vec<u8> {
    let body = block.strip_suffix(b"\r\n\r\n").unwrap_or(block);
    let mut out = body.to_vec();
    out.extend_from_slice(format!("\r\n{BATCH_COMMIT}: 1\r\n\r\n").as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(pairs: &[(&str, &str)]) -> Vec<u8> {
        let mut out = b"NATS/1.0\r\n".to_vec();
        for (key, value) in pairs {
            out.extend_from_slice(format!("{key}: {value}\r\n").as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        out
    }

    #[test]
    fn a_batch_commits_in_order_and_a_gap_abandons_it() {
        let mut open = OpenBatches::default();
        let first = block(&[(BATCH_ID, "b"), (BATCH_SEQUENCE, "1")]);
        assert!(matches!(open.stage("S", "b", "s.a", &first, b"1"), Ok(Staged::More)));
        let gap = block(&[(BATCH_ID, "b"), (BATCH_SEQUENCE, "3")]);
        assert_eq!(open.stage("S", "b", "s.a", &gap, b"3").err().unwrap().err_code, 10176);
        let commit = block(&[(BATCH_ID, "b"), (BATCH_SEQUENCE, "2"), (BATCH_COMMIT, "1")]);
        assert_eq!(open.stage("S", "b", "s.a", &commit, b"2").err().unwrap().err_code, 10176);
        assert!(matches!(open.stage("S", "b", "s.a", &first, b"1"), Ok(Staged::More)));
        let Ok(Staged::Commit { messages, .. }) = open.stage("S", "b", "s.a", &commit, b"2") else {
            panic!("commit expected");
        };
        assert_eq!(messages.len(), 2);
    }

    #[test]
    fn eob_commits_without_storing_its_message() {
        let mut open = OpenBatches::default();
        let first = block(&[(BATCH_ID, "e"), (BATCH_SEQUENCE, "1")]);
        assert!(matches!(open.stage("S", "e", "s.a", &first, b"1"), Ok(Staged::More)));
        let eob = block(&[(BATCH_ID, "e"), (BATCH_SEQUENCE, "2"), (BATCH_COMMIT, "eob")]);
        let Ok(Staged::Commit { messages, .. }) = open.stage("S", "e", "s.a", &eob, b"") else {
            panic!("commit expected");
        };
        assert_eq!(messages.len(), 1);
        assert_eq!(header(&messages[0].headers, BATCH_COMMIT), Some("1"));
    }
}
