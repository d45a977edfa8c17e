//! Atomic batch publish (nats-server 2.12, ADR-50), the stream's half: committing a
//! staged batch all or nothing. Staging (batch ids, sequences, timeouts) is the
//! JetStream service's (`jetstream/service/batch.rs`).
//!
//! A commit first checks every message against the stream as the batch would leave it
//! (expected sequences, duplicate ids, discard-new limits, TTL and rollup headers),
//! changing nothing; only if all pass are all messages appended, in one synchronous
//! section, and acknowledged together once durable. Checks as nats-server 2.15.1 answers
//! them (recorded): an expected last sequence is compared with the sequence the batch
//! has reached (10071 with it on a mismatch; on a later message even a match is 10164),
//! an expected last subject sequence on a subject the batch already wrote is 10164, and
//! a `Nats-Msg-Id` seen before or twice in the batch is 10201.
//!
//! A batch larger than one group commit can reach the disk in parts. Every stored batch
//! message keeps its `Nats-Batch-Id` / `Nats-Batch-Sequence` headers and the last one
//! `Nats-Batch-Commit: 1`, so recovery drops the messages of a batch whose commit never
//! reached the disk (`replay.rs`): after a crash a batch is there whole or not at all.

use std::collections::{HashMap, HashSet};

use super::config::DiscardPolicy;
use super::counter::KnownTotal;
use super::counting::{Counted, CounterStep};
use super::error::Error;
use super::headers::{header_value, PublishExpectations, MESSAGE_INCREMENT};
use super::ingest::{Origin, PublishRequest};
use super::rollup::{check_rollup, check_ttl};
use super::schedule::check_client_headers;
use super::stored_size::stored_bytes;
use super::stream::{check_expectations, Checks, Keep, Published, Stream, REMOVAL_RECORDS_BYTES_MAX};
use crate::store::record::encoded_len;

/// One message of a staged batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchMessage {
    /// The subject stored (after the stream's subject transform).
    pub subject: String,
    /// The subject the client published to, when the transform changed it (the stream
    /// must capture this one).
    pub captured: Option<String>,
    pub headers: Vec<u8>,
    pub payload: Vec<u8>,
}

impl Stream {
    /// Stores `messages` all or nothing; the last one's sequence once all are durable.
    pub async fn publish_batch(&self, messages: &[BatchMessage]) -> Result<u64, Error> {
        for message in messages {
            let captured = message.captured.as_deref().unwrap_or(&message.subject);
            self.check_message(Origin::Client, captured, &message.subject, &message.headers, &message.payload)?;
        }
        let room: usize = messages.iter().map(|m| size_of(m) + REMOVAL_RECORDS_BYTES_MAX + m.subject.len()).sum();
        // A counter stream's totals of the batch's subjects are read before the section
        // that appends; they are known again after any wait for room.
        loop {
            for message in messages {
                self.load_counter_total(&request_of(message)).await?;
            }
            self.log.ensure_room(room + self.counter_bodies_bytes_max(messages)).await?;
            let unknown =
                messages.iter().any(|m| matches!(self.counter_step(&request_of(m)), Ok(CounterStep::Unknown)));
            if !unknown {
                break;
            }
        }
        self.check_batch(messages)?;
        let counted_all = self.count_batch(messages)?;
        let mut appended = None;
        let mut first_before = None;
        for (message, counted) in messages.iter().zip(counted_all) {
            let request = counted.as_ref().map_or(request_of(message), |counted| counted.request(request_of(message)));
            let (headers, payload) = (request.headers, request.payload);
            let size = encoded_len(message.subject.len(), headers.len(), payload.len());
            let published = self.publish_now(
                Origin::Client,
                &message.subject,
                headers,
                payload,
                Keep::Store,
                Checks::DoneForBatch,
                None,
            );
            // Checked above, so only a failed log can refuse here; nothing of the batch
            // is then acknowledged (a fail-stopped log takes no more writes).
            match published? {
                Published::Appended { group, seq, first_before: before } => {
                    first_before.get_or_insert(before);
                    self.note_appended(size);
                    if let Some(counted) = &counted {
                        self.note_counter_total(&message.subject, headers, seq, counted);
                    }
                    appended = Some((group, seq));
                }
                Published::Duplicate(_) => unreachable!("dedupe is checked for the whole batch"),
            }
        }
        let Some((group, last_seq)) = appended else {
            return Err(Error::NoMessageFound);
        };
        self.durable(&group).await?;
        self.after_removals(first_before.unwrap_or(0)).await;
        Ok(last_seq)
    }

    /// What a counter stream stores for each message, all counted before any is appended
    /// (a refusal then leaves nothing half stored): each increment adds to the total the
    /// batch's previous one on its subject left. Every subject's total is known.
    fn count_batch(&self, messages: &[BatchMessage]) -> Result<Vec<Option<Counted>>, Error> {
        let mut running: HashMap<&str, KnownTotal> = HashMap::new();
        let mut counted_all = Vec::with_capacity(messages.len());
        for message in messages {
            let request = request_of(message);
            let Some(increment) = self.increment_of(&request)? else {
                counted_all.push(None);
                continue;
            };
            let known = match running.remove(message.subject.as_str()) {
                Some(known) => known,
                None => self.known_total(&message.subject)?.ok_or(Error::NoMessageFound)?,
            };
            let counted = self.count(&request, increment, known)?;
            running.insert(&message.subject, counted.known.clone());
            counted_all.push(Some(counted));
        }
        Ok(counted_all)
    }

    /// Every refusal the batch would meet, without changing anything.
    fn check_batch(&self, messages: &[BatchMessage]) -> Result<(), Error> {
        let meta = self.meta.borrow();
        let config = &meta.config;
        let table = self.table.borrow();
        let dedupe = self.dedupe.borrow();
        let mut ids = HashSet::new();
        let mut written: HashSet<&str> = HashSet::new();
        let mut staged_per_subject: HashMap<&str, u64> = HashMap::new();
        let mut staged_bytes = 0;
        for (index, message) in messages.iter().enumerate() {
            let expected = PublishExpectations::from_headers(&message.headers);
            if expected.stream.is_some_and(|stream| stream != config.name) {
                return Err(Error::WrongExpectedStream { actual: config.name.clone() });
            }
            check_ttl(&expected, config)?;
            check_client_headers(&message.headers, &message.subject, config, self.context.clock.now_ns())?;
            check_rollup(&expected, config)?;
            if config.allow_msg_counter && header_value(&message.headers, MESSAGE_INCREMENT).is_none_or(str::is_empty) {
                return Err(Error::MessageCounterIncrementMissing);
            }
            if let Some(id) = expected.msg_id {
                if dedupe.lookup(id).is_some() || !ids.insert(id) {
                    return Err(Error::BatchDuplicateMsgId);
                }
            }
            if let Some(seq) = expected.last_seq {
                let staged = table.last_seq + index as u64;
                if seq != staged {
                    return Err(Error::WrongLastSequence { actual: staged });
                }
                if index > 0 {
                    return Err(Error::WrongLastSequenceConstant);
                }
            }
            if expected.last_subject_seq.is_some() {
                let about = expected.last_subject_seq_subject.unwrap_or(&message.subject);
                if written.contains(about) {
                    return Err(Error::WrongLastSequenceConstant);
                }
                let per_subject = PublishExpectations {
                    last_subject_seq: expected.last_subject_seq,
                    last_subject_seq_subject: expected.last_subject_seq_subject,
                    ..PublishExpectations::default()
                };
                check_expectations(&per_subject, &config.name, &table, &dedupe, &message.subject)?;
            }
            written.insert(&message.subject);
            let staged = staged_per_subject.entry(&message.subject).or_default();
            *staged += 1;
            let (subject, headers, payload) = (message.subject.len(), message.headers.len(), message.payload.len());
            staged_bytes += stored_bytes(config.storage, subject, headers, payload) as u64;
            if config.discard == DiscardPolicy::New {
                let subject_count = table
                    .subjects
                    .id_of(&message.subject)
                    .and_then(|id| table.subjects.entry(id))
                    .map_or(0, |entry| entry.count);
                if config.discard_new_per_subject
                    && config.max_msgs_per_subject.is_some_and(|max| subject_count + *staged > max)
                {
                    return Err(Error::MaximumMessagesPerSubjectExceeded);
                }
                if config.max_msgs.is_some_and(|max| table.messages + index as u64 + 1 > max) {
                    return Err(Error::MaximumMessagesExceeded);
                }
                if config.max_bytes.is_some_and(|max| table.bytes + staged_bytes > max) {
                    return Err(Error::MaximumBytesExceeded);
                }
            }
        }
        Ok(())
    }
}

impl Stream {
    /// More than the bodies a counter stream stores for the batch take: no total grows
    /// by more digits than the increments added to it have.
    fn counter_bodies_bytes_max(&self, messages: &[BatchMessage]) -> usize {
        if !self.meta.borrow().config.allow_msg_counter {
            return 0;
        }
        let increments: usize =
            messages.iter().filter_map(|m| header_value(&m.headers, MESSAGE_INCREMENT)).map(str::len).sum();
        // A subject's sources stay as they are through a client's increments, so each of
        // its messages adds the same `Nats-Counter-Sources` header.
        let (totals_max, sources_max) = messages
            .iter()
            .filter_map(|m| match self.counter_step(&request_of(m)) {
                Ok(CounterStep::Counted(counted)) => {
                    let added = counted.headers.map_or(0, |headers| headers.len().saturating_sub(m.headers.len()));
                    Some((counted.known.total.to_string().len(), added))
                }
                _ => None,
            })
            .fold((0, 0), |(totals, sources), (total, added)| (totals.max(total), sources.max(added)));
        messages.len() * (COUNTER_BODY_FRAME_BYTES + totals_max + sources_max + increments)
    }
}

/// `{"val":""}` around a total's digits.
const COUNTER_BODY_FRAME_BYTES: usize = 10;

fn request_of(message: &BatchMessage) -> PublishRequest<'_> {
    PublishRequest::client(&message.subject, &message.headers, &message.payload)
}

fn size_of(message: &BatchMessage) -> usize {
    encoded_len(message.subject.len(), message.headers.len(), message.payload.len())
}
