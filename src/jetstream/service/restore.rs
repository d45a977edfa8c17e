//! `STREAM.RESTORE` of a nats-server 2.15 backup (`codec::archive`): the upload is read
//! as it arrives and checked as nats-server checks it (state first, then exactly
//! `consumer_count` consumers, messages in strictly ascending sequence within the
//! state's range, the sentinel last); then, on the new stream's owner, the messages are
//! stored at their own sequences and times (gaps become deleted sequences, the trailing
//! ones too), and the consumers are created at their ack floors.
//!
//! The upload is not held in memory: the coordinator stages the chunks as they come in a
//! file under the store directory (`RESTORE_STAGING_DIR`, as nats-server stages its own),
//! keeping only the state, the consumers and a count; the owner reads the messages back
//! from that file, a window at a time.

use std::collections::VecDeque;
use std::path::PathBuf;

use super::StreamService;
use crate::codec::archive::{ArchiveReader, Entry, CONSUMER_PREFIX, STATE_ENTRY};
use crate::consumer::{ConsumerSeq, Position, StreamSeq};
use crate::jetstream::errors::ApiError;
use crate::jetstream::responses::{encode_reply, ResponseType};
use crate::jetstream::stream_info::{StreamCreateBody, StreamState as WireState};
use crate::jetstream::ApiRequest;
use crate::stream::{Appended, Keep, Origin, PublishRequest};

/// Restored messages appended but not yet known durable, at most: enough for group commit
/// to fill its groups, few enough that a failed write is seen soon.
const APPENDS_IN_FLIGHT: usize = 1024;

/// Where uploads are staged, under the store directory; emptied at start.
pub const RESTORE_STAGING_DIR: &str = "restore-staging";

/// How much of a staged upload the owner reads at a time, and how many reads it keeps
/// ahead of the appends.
const STAGED_READ_BYTES: usize = 1 << 20;
const STAGED_READ_AHEAD: usize = 4;

/// What a finished upload holds, ready to store.
#[derive(Debug, Default)]
pub struct RestoreWork {
    pub state: WireState,
    /// Each consumer's entry: `{"config": …, "state": {"delivered": …, "ack_floor": …}}`.
    pub consumers: Vec<serde_json::Value>,
    /// Messages the upload holds (checked in order as they arrived).
    pub messages: u64,
    /// The staged upload the messages are read back from (set by the coordinator).
    pub staged: PathBuf,
    /// The largest entry the upload was checked against.
    pub entry_bytes_max: u64,
}

/// An upload in progress.
#[derive(Debug)]
pub struct RestoreUpload {
    reader: ArchiveReader,
    work: RestoreWork,
    state_seen: bool,
    consumers_left: u64,
    last_seq: u64,
    finished: bool,
}

/// nats-server's 10062 `restore failed: …`.
pub fn restore_failed(detail: &str) -> ApiError {
    ApiError::new(500, 10062, format!("restore failed: {detail}"))
}

impl RestoreUpload {
    /// `entry_bytes_max`: the largest message (headers and body) the stream may hold.
    pub fn new(entry_bytes_max: u64) -> RestoreUpload {
        RestoreUpload {
            reader: ArchiveReader::new(entry_bytes_max.max(1 << 20)),
            work: RestoreWork { entry_bytes_max: entry_bytes_max.max(1 << 20), ..RestoreWork::default() },
            state_seen: false,
            consumers_left: 0,
            last_seq: 0,
            finished: false,
        }
    }

    /// Takes one uploaded chunk and checks the entries it completes.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), ApiError> {
        self.reader.push(chunk);
        while let Some(entry) = self.reader.next_entry().map_err(|e| restore_failed(&e.to_string()))? {
            self.take(entry)?;
        }
        Ok(())
    }

    fn take(&mut self, entry: Entry) -> Result<(), ApiError> {
        if self.finished {
            return Err(restore_failed("data after the end of the backup"));
        }
        if !self.state_seen {
            if entry.name != STATE_ENTRY {
                return Err(restore_failed("the backup does not begin with its state"));
            }
            let state: WireState =
                serde_json::from_slice(&entry.payload).map_err(|e| restore_failed(&format!("state: {e}")))?;
            let never_used = state.first_seq == 0 && state.last_seq == 0;
            if !never_used && (state.first_seq == 0 || state.first_seq > state.last_seq + 1) {
                return Err(restore_failed("inconsistent sequence range"));
            }
            self.state_seen = true;
            self.consumers_left = state.consumer_count;
            self.last_seq = state.first_seq.saturating_sub(1);
            self.work.state = state;
            return Ok(());
        }
        if self.consumers_left > 0 {
            let value: serde_json::Value = match entry.name.strip_prefix(CONSUMER_PREFIX) {
                Some(_) => serde_json::from_slice(&entry.payload).map_err(|e| restore_failed(&e.to_string()))?,
                None => return Err(restore_failed("missing consumer entry")),
            };
            if value.get("config").is_none() || value.get("state").is_none() {
                return Err(restore_failed("consumer entry without config or state"));
            }
            self.consumers_left -= 1;
            self.work.consumers.push(value);
            return Ok(());
        }
        if entry.is_sentinel() {
            self.finished = true;
            return Ok(());
        }
        if entry.sequence <= self.last_seq || entry.sequence > self.work.state.last_seq {
            return Err(restore_failed(&format!("message sequence {} out of order", entry.sequence)));
        }
        self.last_seq = entry.sequence;
        self.work.messages += 1;
        Ok(())
    }

    /// The work, once the sentinel has arrived and nothing is left over.
    pub fn finish(self) -> Result<RestoreWork, ApiError> {
        if !self.finished || !self.reader.is_drained() {
            return Err(restore_failed("unexpected end of the backup"));
        }
        Ok(self.work)
    }
}

impl StreamService {
    /// Stores a checked backup into stream `name`, just created on this shard, and answers
    /// with the stream's info in a stream-create response.
    pub async fn restore_into(&self, name: &str, work: RestoreWork) -> Vec<u8> {
        let outcome = self.restore_outcome(name, work).await;
        encode_reply(ResponseType::StreamCreate, &outcome.map(|info| StreamCreateBody { info, did_create: false }))
    }

    async fn restore_outcome(
        &self,
        name: &str,
        work: RestoreWork,
    ) -> Result<crate::jetstream::stream_info::StreamInfo, ApiError> {
        let stream = self.stream_handle(name)?;
        let failed = |error: crate::stream::Error| restore_failed(&error.to_string());
        if work.state.first_seq > 1 {
            stream.skip_to(work.state.first_seq - 1).await.map_err(failed)?;
        }
        // Appended without waiting for each to be written, so group commit writes many
        // messages per write, and deferred: no group waits for an fdatasync, one at the
        // end makes them all durable (+10 % for 1 GiB, perf/backup.md); at most
        // `APPENDS_IN_FLIGHT` wait to be settled (written), in order.
        let staged_failed = |error: glommio::GlommioError<()>| restore_failed(&format!("staged upload: {error}"));
        let staged = glommio::io::DmaFile::open(&work.staged).await.map_err(staged_failed)?;
        // Direct reads, a few buffers ahead of the appends (the staging file is written
        // with direct I/O too: nothing of it is in the page cache).
        let mut staged = glommio::io::DmaStreamReaderBuilder::new(staged)
            .with_buffer_size(STAGED_READ_BYTES)
            .with_read_ahead(STAGED_READ_AHEAD)
            .build();
        let mut reader = ArchiveReader::new(work.entry_bytes_max);
        // The state and the consumers come first; the coordinator took them already.
        let mut skip = 1 + work.consumers.len();
        let mut unsettled = VecDeque::with_capacity(APPENDS_IN_FLIGHT);
        'staged: loop {
            let window = staged.get_buffer_aligned(STAGED_READ_BYTES as u64).await.map_err(staged_failed)?;
            if window.is_empty() {
                break;
            }
            reader.push(&window);
            // One clock reading for the window's messages (they keep their own timestamps).
            let at_ns = Some(stream.now_ns());
            while let Some(message) = reader.next_entry().map_err(|error| restore_failed(&error.to_string()))? {
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                if message.is_sentinel() {
                    break 'staged;
                }
                let request = PublishRequest {
                    origin: Origin::Mirror { seq: message.sequence, timestamp_ns: message.timestamp_ns },
                    captured: &message.name,
                    subject: &message.name,
                    headers: &message.headers,
                    payload: &message.payload,
                    keep: Keep::Store,
                    at_ns,
                };
                if let Appended::Pending(pending) = stream.append_unsettled_deferred(request).await.map_err(failed)? {
                    unsettled.push_back(pending);
                }
                if unsettled.len() >= APPENDS_IN_FLIGHT {
                    let oldest = unsettled.pop_front().expect("a full window has a front");
                    stream.settle(&oldest).await.map_err(failed)?;
                }
            }
        }
        let _ = staged.close().await;
        for pending in unsettled {
            stream.settle(&pending).await.map_err(failed)?;
        }
        // The appends were written without an fdatasync each: one for them all, before
        // the restore is answered.
        stream.flush().await.map_err(failed)?;
        stream.skip_to(work.state.last_seq).await.map_err(failed)?;
        for entry in &work.consumers {
            self.restore_backup_consumer(name, entry).await?;
        }
        self.info(name, false)
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
    use crate::codec::archive::ArchiveWriter;

    fn message(seq: u64) -> Entry {
        Entry { name: "s.a".into(), timestamp_ns: 1, sequence: seq, headers: Vec::new(), payload: b"x".to_vec() }
    }

    fn state(first_seq: u64, last_seq: u64, consumer_count: u64) -> Entry {
        let zero = "0001-01-01T00:00:00Z";
        let json = serde_json::json!({"messages": 0, "bytes": 0, "first_seq": first_seq, "first_ts": zero,
            "last_seq": last_seq, "last_ts": zero, "consumer_count": consumer_count});
        Entry { name: STATE_ENTRY.into(), payload: serde_json::to_vec(&json).unwrap(), ..Entry::sentinel() }
    }

    /// Uploads `entries` (and the sentinel when `finished`) and finishes.
    fn upload(entries: &[Entry], finished: bool) -> Result<RestoreWork, ApiError> {
        let mut writer = ArchiveWriter::new();
        for entry in entries {
            writer.write(entry);
        }
        let mut bytes = writer.take_framed();
        if finished {
            bytes.extend(writer.finish());
        }
        let mut upload = RestoreUpload::new(1 << 20);
        for chunk in bytes.chunks(7) {
            upload.push(chunk)?;
        }
        upload.finish()
    }

    fn refusal(outcome: Result<RestoreWork, ApiError>) -> String {
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
        let mut cut = RestoreUpload::new(1 << 20);
        let mut writer = ArchiveWriter::new();
        writer.write(&state(1, 9, 0));
        cut.push(&writer.finish()[..20]).unwrap();
        assert!(refusal(cut.finish()).contains("unexpected end"));
    }
}
