//! `STREAM.RESTORE` of a nats-server 2.15 backup (`codec::archive`), on the new stream's
//! owner, as the upload arrives: each chunk is decoded and checked as nats-server checks
//! a backup (state first, then exactly `consumer_count` consumers, messages in strictly
//! ascending sequence within the state's range, the sentinel last), and its messages are
//! stored at their own sequences and times (gaps become deleted sequences, the trailing
//! ones too) in an unlisted stream (`engine::unlisted`): nothing sees it, it captures
//! nothing, and a crash leaves nothing of it. Once the sentinel has arrived the stream is
//! made durable (one flush for the whole upload), adopted under its name (the server's
//! coordinator checks the name and subjects are still free), and its consumers are
//! created at their ack floors.
//!
//! Storing as the upload arrives, rather than staging the upload and storing it after,
//! reads each byte once and overlaps the storing with the transfer (perf/backup.md).

use std::collections::VecDeque;
use std::path::Path;
use std::rc::Rc;

use super::StreamService;
use crate::codec::archive::{ArchiveReader, EntryParts, CONSUMER_PREFIX, STATE_ENTRY};
use crate::consumer::{ConsumerSeq, Position, StreamSeq};
use crate::engine::UnlistedStream;
use crate::jetstream::errors::ApiError;
use crate::jetstream::responses::{encode_reply, ResponseType};
use crate::jetstream::stream_config::StreamConfig as WireConfig;
use crate::jetstream::stream_info::{StreamCreateBody, StreamState as WireState};
use crate::jetstream::ApiRequest;
use crate::stream::{Appended, Keep, Origin, PendingAppend, PublishRequest, Stream};

use super::records::ApiRecord;
use super::{convert, now_ns};

/// Groups appended to but not yet known written, at most: the newest fills (to
/// `GROUP_COMMIT_BYTES_MAX`) while the one before it is written, and a failed write is
/// seen within a few MiB.
const GROUPS_IN_FLIGHT: usize = 2;

/// Bytes of messages stored between reactor turns, so a large chunk does not hold the
/// shard's other connections for long. Not more often: each turn costs the shard several
/// `io_uring_enter` calls (glommio re-arms its preemption timer), and the upload needs none
/// to overlap with the storing (see `server::restore_routing`).
const STORED_BYTES_PER_TURN: usize = 1024 * 1024;

/// Where uploads are stored until adopted, under the store directory; emptied at start.
pub const RESTORE_STAGING_DIR: &str = "restore-staging";

/// nats-server's 10062 `restore failed: …`.
pub fn restore_failed(detail: &str) -> ApiError {
    ApiError::new(500, 10062, format!("restore failed: {detail}"))
}

/// What an entry was, once checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    State,
    Consumer,
    Message,
    End,
}

/// The checks on a backup's entries, in order: pure, no storage.
#[derive(Debug, Default)]
pub struct RestoreCheck {
    pub state: WireState,
    /// Each consumer's entry: `{"config": …, "state": {"delivered": …, "ack_floor": …}}`.
    pub consumers: Vec<serde_json::Value>,
    /// Messages taken so far.
    pub messages: u64,
    state_seen: bool,
    consumers_left: u64,
    last_seq: u64,
    finished: bool,
}

impl RestoreCheck {
    /// Checks the next entry; its kind.
    pub fn take(&mut self, entry: &EntryParts<'_>) -> Result<Step, ApiError> {
        if self.finished {
            return Err(restore_failed("data after the end of the backup"));
        }
        if !self.state_seen {
            if entry.name != STATE_ENTRY {
                return Err(restore_failed("the backup does not begin with its state"));
            }
            let state: WireState =
                serde_json::from_slice(entry.payload).map_err(|e| restore_failed(&format!("state: {e}")))?;
            let never_used = state.first_seq == 0 && state.last_seq == 0;
            if !never_used && (state.first_seq == 0 || state.first_seq > state.last_seq + 1) {
                return Err(restore_failed("inconsistent sequence range"));
            }
            self.state_seen = true;
            self.consumers_left = state.consumer_count;
            self.last_seq = state.first_seq.saturating_sub(1);
            self.state = state;
            return Ok(Step::State);
        }
        if self.consumers_left > 0 {
            let value: serde_json::Value = match entry.name.strip_prefix(CONSUMER_PREFIX) {
                Some(_) => serde_json::from_slice(entry.payload).map_err(|e| restore_failed(&e.to_string()))?,
                None => return Err(restore_failed("missing consumer entry")),
            };
            if value.get("config").is_none() || value.get("state").is_none() {
                return Err(restore_failed("consumer entry without config or state"));
            }
            self.consumers_left -= 1;
            self.consumers.push(value);
            return Ok(Step::Consumer);
        }
        if entry.is_sentinel() {
            self.finished = true;
            return Ok(Step::End);
        }
        if entry.sequence <= self.last_seq || entry.sequence > self.state.last_seq {
            return Err(restore_failed(&format!("message sequence {} out of order", entry.sequence)));
        }
        self.last_seq = entry.sequence;
        self.messages += 1;
        Ok(Step::Message)
    }

    /// Refuses a backup that ended before its sentinel, or left bytes after it
    /// (`drained`: the reader holds no partial chunk or entry).
    pub fn finish(&self, drained: bool) -> Result<(), ApiError> {
        match self.finished && drained {
            true => Ok(()),
            false => Err(restore_failed("unexpected end of the backup")),
        }
    }
}

/// An upload being stored into its unlisted stream.
pub struct RestoreInto {
    unlisted: UnlistedStream,
    record: ApiRecord,
    reader: ArchiveReader,
    check: RestoreCheck,
    /// The first append of each group not yet known written, oldest first.
    unsettled: VecDeque<PendingAppend>,
    /// Bytes of messages stored since the last reactor turn.
    stored_since_turn: usize,
}

/// A stored upload, durable, ready to be adopted; and the consumers to create after.
pub struct RestoredStream {
    unlisted: UnlistedStream,
    record: ApiRecord,
    pub consumers: Vec<serde_json::Value>,
}

impl RestoredStream {
    pub fn name(&self) -> &str {
        &self.record.config.name
    }

    /// The unlisted stream, to discard.
    pub fn into_unlisted(self) -> UnlistedStream {
        self.unlisted
    }
}

impl RestoreInto {
    /// Decodes, checks and stores one uploaded chunk.
    pub async fn push(&mut self, chunk: &[u8]) -> Result<(), ApiError> {
        let stream: Rc<Stream> = self.unlisted.stream().clone();
        let failed = |error: crate::stream::Error| restore_failed(&error.to_string());
        self.reader.push(chunk);
        // One clock reading for the chunk's messages (they keep their own timestamps).
        let at_ns = Some(stream.now_ns());
        while let Some(entry) = self.reader.next_parts().map_err(|error| restore_failed(&error.to_string()))? {
            match self.check.take(&entry)? {
                Step::State if self.check.state.first_seq > 1 => {
                    stream.skip_to(self.check.state.first_seq - 1).await.map_err(failed)?;
                }
                Step::Message => {
                    let request = PublishRequest {
                        origin: Origin::Mirror { seq: entry.sequence, timestamp_ns: entry.timestamp_ns },
                        captured: entry.name,
                        subject: entry.name,
                        headers: entry.headers,
                        payload: entry.payload,
                        keep: Keep::Store,
                        at_ns,
                    };
                    // Appended without waiting for each to be written, so group commit
                    // writes many messages per write, and deferred: no group waits for an
                    // fdatasync; `finish` makes them all durable at once.
                    if let Appended::Pending(pending) =
                        stream.append_unsettled_deferred(request).await.map_err(failed)?
                    {
                        if !self.unsettled.back().is_some_and(|last| last.same_group(&pending)) {
                            // A new group: the one before it takes no more appends, so it is written now.
                            self.unsettled.push_back(pending);
                            stream.start_writes();
                        }
                    }
                    if self.unsettled.len() > GROUPS_IN_FLIGHT {
                        let oldest = self.unsettled.pop_front().expect("a full window has a front");
                        stream.settle(&oldest).await.map_err(failed)?;
                    }
                    self.stored_since_turn += entry.name.len() + entry.headers.len() + entry.payload.len();
                    if self.stored_since_turn >= STORED_BYTES_PER_TURN {
                        self.stored_since_turn = 0;
                        crate::shard::yield_to_io().await;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Once the whole upload is stored: the stream made durable and its trailing deleted
    /// sequences recorded, ready to adopt.
    /// On failure, the unlisted stream comes back with the error, to discard.
    pub async fn finish(mut self) -> Result<RestoredStream, (ApiError, UnlistedStream)> {
        let result = self.finish_stream().await;
        let RestoreInto { unlisted, record, check, .. } = self;
        match result {
            Ok(()) => Ok(RestoredStream { unlisted, record, consumers: check.consumers }),
            Err(error) => Err((error, unlisted)),
        }
    }

    async fn finish_stream(&mut self) -> Result<(), ApiError> {
        self.check.finish(self.reader.is_drained())?;
        let stream = self.unlisted.stream().clone();
        let failed = |error: crate::stream::Error| restore_failed(&error.to_string());
        for pending in std::mem::take(&mut self.unsettled) {
            stream.settle(&pending).await.map_err(failed)?;
        }
        stream.flush().await.map_err(failed)?;
        // Not checkpointed here: the shard's maintenance writes its first checkpoint once
        // it is adopted, after the client has its answer (a million messages: ~40 ms).
        // A restart before that reads the whole log, which holds everything.
        stream.skip_to(self.check.state.last_seq).await.map_err(failed)?;
        Ok(())
    }

    /// The unlisted stream, to discard.
    pub fn into_unlisted(self) -> UnlistedStream {
        self.unlisted
    }
}

impl StreamService {
    /// Starts storing an upload into an unlisted stream of `config` (a file stream in
    /// `file_dir`, which must not exist); `entry_bytes_max`: the largest message (headers
    /// and body) the upload may hold.
    pub async fn restore_begin(
        &self,
        config: WireConfig,
        file_dir: &Path,
        entry_bytes_max: u64,
    ) -> Result<RestoreInto, ApiError> {
        let engine_config = convert::engine_config(&config, self.sync)?;
        let record = ApiRecord { config, created_ns: now_ns() };
        let placement = crate::stream::ShardId(self.shard);
        let unlisted = self
            .engine
            .create_unlisted(engine_config, placement, Some(record.to_extension()), file_dir)
            .await
            .map_err(|error| restore_failed(&error.to_string()))?;
        let entry_bytes_max = entry_bytes_max.max(1 << 20);
        Ok(RestoreInto {
            unlisted,
            record,
            reader: ArchiveReader::new(entry_bytes_max),
            check: RestoreCheck::default(),
            unsettled: VecDeque::with_capacity(GROUPS_IN_FLIGHT + 1),
            stored_since_turn: 0,
        })
    }

    /// Removes an upload's unlisted stream.
    pub async fn restore_discard(&self, unlisted: UnlistedStream) {
        self.engine.discard(unlisted).await;
    }

    /// Makes a stored upload the stream of its name (the caller checked the name and
    /// subjects are free in the catalog): the create reply, and the stream's summary
    /// when it now exists.
    pub async fn adopt_restored(&self, restored: RestoredStream) -> (Vec<u8>, bool) {
        let RestoredStream { unlisted, record, .. } = restored;
        let name = record.config.name.clone();
        // The engine refuses a name it holds (the service's records are its streams).
        let outcome = self.engine.adopt(unlisted).await.map_err(|e| convert::api_error(&e));
        let adopted = outcome.is_ok();
        let reply = outcome.and_then(|_| {
            self.register_created(record);
            self.info(&name, false)
        });
        let body = reply.map(|info| StreamCreateBody { info, did_create: true });
        (encode_reply(ResponseType::StreamCreate, &body), adopted)
    }

    /// Once adopted: the backup's consumers created at their ack floors; the restore's
    /// answer (a stream-create response with the stream's info).
    pub async fn restore_consumers(&self, name: &str, consumers: &[serde_json::Value]) -> Vec<u8> {
        let mut outcome = Ok(());
        for entry in consumers {
            outcome = self.restore_backup_consumer(name, entry).await;
            if outcome.is_err() {
                break;
            }
        }
        let outcome = outcome.and_then(|()| self.info(name, false));
        encode_reply(ResponseType::StreamCreate, &outcome.map(|info| StreamCreateBody { info, did_create: false }))
    }

    /// Creates a consumer from its entry and starts it after its ack floor.
    async fn restore_backup_consumer(&self, stream_name: &str, entry: &serde_json::Value) -> Result<(), ApiError> {
        let config = &entry["config"];
        let name = config["durable_name"].as_str().or(config["name"].as_str()).unwrap_or_default().to_string();
        let body = serde_json::json!({ "stream_name": stream_name, "config": config });
        let request = ApiRequest::ConsumerCreate { stream: stream_name, consumer: Some(&name), filter: None };
        let body = serde_json::to_vec(&body).expect("a JSON value serialises");
        let reply = self.consumer_reply(request, &body).await;
        if crate::jetstream::responses::is_error_reply(&reply) {
            return Err(restore_failed(&format!("consumer {name}: {}", String::from_utf8_lossy(&reply))));
        }
        let floor = &entry["state"]["ack_floor"];
        let floor = Position {
            stream: StreamSeq(floor["stream_seq"].as_u64().unwrap_or(0)),
            consumer: ConsumerSeq(floor["consumer_seq"].as_u64().unwrap_or(0)),
        };
        let stream = self.stream_handle(stream_name)?;
        let id = self.consumers.find(stream_name, &name).ok_or_else(ApiError::consumer_not_found)?;
        if floor.stream.get() > 0 || floor.consumer.get() > 0 {
            self.consumers.call(&stream, id, |entry, cx| entry.consumer.resume_from_backup(floor, cx));
            self.consumers.effects_carried_out().await;
        }
        if !self.persist_consumer(id, true).await {
            return Err(restore_failed("consumer state could not be written"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::archive::{ArchiveWriter, Entry};

    fn message(seq: u64) -> Entry {
        Entry { name: "s.a".into(), timestamp_ns: 1, sequence: seq, headers: Vec::new(), payload: b"x".to_vec() }
    }

    fn state(first_seq: u64, last_seq: u64, consumer_count: u64) -> Entry {
        let zero = "0001-01-01T00:00:00Z";
        let json = serde_json::json!({"messages": 0, "bytes": 0, "first_seq": first_seq, "first_ts": zero,
            "last_seq": last_seq, "last_ts": zero, "consumer_count": consumer_count});
        Entry { name: STATE_ENTRY.into(), payload: serde_json::to_vec(&json).unwrap(), ..Entry::sentinel() }
    }

    /// Checks `entries` (and the sentinel when `finished`), read a few bytes at a time.
    fn upload(entries: &[Entry], finished: bool) -> Result<RestoreCheck, ApiError> {
        let mut writer = ArchiveWriter::new();
        for entry in entries {
            writer.write(entry);
        }
        let mut bytes = writer.take_framed();
        if finished {
            bytes.extend(writer.finish());
        }
        let (mut reader, mut check) = (ArchiveReader::new(1 << 20), RestoreCheck::default());
        for chunk in bytes.chunks(7) {
            reader.push(chunk);
            while let Some(entry) = reader.next_parts().map_err(|error| restore_failed(&error.to_string()))? {
                check.take(&entry)?;
            }
        }
        check.finish(reader.is_drained())?;
        Ok(check)
    }

    fn refusal(outcome: Result<RestoreCheck, ApiError>) -> String {
        serde_json::to_value(outcome.expect_err("refused")).unwrap()["description"].as_str().unwrap().to_string()
    }

    #[test]
    fn a_well_formed_backup_is_taken_whole() {
        let consumer = Entry {
            name: "consumers/C".into(),
            payload: br#"{"config":{"durable_name":"C"},"state":{"ack_floor":{"stream_seq":3}}}"#.to_vec(),
            ..Entry::sentinel()
        };
        let work = upload(&[state(2, 9, 1), consumer, message(2), message(5)], true).unwrap();
        assert_eq!((work.state.first_seq, work.state.last_seq), (2, 9));
        assert_eq!(work.consumers.len(), 1);
        assert_eq!(work.messages, 2);
    }

    #[test]
    fn out_of_order_out_of_range_and_unfinished_backups_are_refused() {
        assert!(refusal(upload(&[state(1, 9, 0), message(3), message(3)], true)).contains("out of order"));
        assert!(refusal(upload(&[state(4, 9, 0), message(3)], true)).contains("out of order"));
        assert!(refusal(upload(&[state(1, 9, 0), message(10)], true)).contains("out of order"));
        assert!(refusal(upload(&[message(1)], true)).contains("begin with its state"));
        assert!(refusal(upload(&[state(1, 9, 1), message(1)], true)).contains("missing consumer"));
        assert!(refusal(upload(&[state(5, 2, 0)], true)).contains("inconsistent"));
        assert!(refusal(upload(&[state(1, 9, 0), message(1)], false)).contains("unexpected end"));
        let mut writer = ArchiveWriter::new();
        writer.write(&state(1, 9, 0));
        let (mut cut, check) = (ArchiveReader::new(1 << 20), RestoreCheck::default());
        cut.push(&writer.finish()[..20]);
        assert!(refusal(check.finish(cut.is_drained()).map(|()| check)).contains("unexpected end"));
    }
}
