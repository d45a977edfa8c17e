//! `STREAM.SNAPSHOT` on the stream's owner: the stream's config and state, and the whole
//! backup as nats-server 2.15 writes it (`codec::archive`): `state.json`, one entry per
//! consumer (config and state), every message between the state's first and last
//! sequence at its own sequence, and the sentinel, S2 framed.
//!
//! The archive is produced as the chunks are sent (`Snapshot::next_chunk`), between awaits
//! of message reads; the stream stays open to publishes meanwhile, as in nats-server (only
//! messages up to the state's `last_seq` are included). Sending the chunks, with flow
//! control, is the server's (`backup_routing`).

use std::rc::Rc;

use super::{convert, StreamService};
use crate::codec::archive::{ArchiveWriter, Entry, EntryParts, CONSUMER_PREFIX, STATE_ENTRY};
use crate::codec::s2_frame::ENCODE_CHUNK_BYTES;
use crate::jetstream::backup_api::{SnapshotBody, SnapshotRequest};
use crate::jetstream::consumer_info::{ConsumerInfo, SequenceInfo};
use crate::jetstream::errors::ApiError;
use crate::jetstream::metadata;
use crate::jetstream::request::parse_body;
use crate::jetstream::responses::{encode_reply, ResponseType};
use crate::jetstream::stream_info::StreamState as WireState;
use crate::stream::Stream;

/// A sleep that ends at the next reactor turn (glommio submits queued I/O there).
const REACTOR_TURN: std::time::Duration = std::time::Duration::from_micros(1);

/// A snapshot being sent: the archive is produced as it is read, a chunk at a time, so a
/// large stream is never held in memory whole.
pub struct Snapshot {
    pub request: SnapshotRequest,
    stream: Rc<Stream>,
    /// Holds the framed bytes not yet handed out until the archive is finished.
    writer: Option<ArchiveWriter>,
    /// The finished archive's last framed bytes not yet handed out.
    framed: Vec<u8>,
    next_seq: u64,
    last_seq: u64,
}

impl Snapshot {
    /// The next `len` bytes of the framed archive (fewer only for the last chunk); `None`
    /// once it has all been read. Messages deleted meanwhile are left out.
    pub async fn next_chunk(&mut self, len: usize) -> Option<Vec<u8>> {
        // Messages are encoded straight from the segment's read window into the writer,
        // and chunks split off its framed bytes: one copy of each byte before the send.
        while let Some(writer) = self.writer.as_mut().filter(|writer| writer.framed_len() < len) {
            match self.stream.next_seq(self.next_seq, None).filter(|found| *found <= self.last_seq) {
                Some(found) => {
                    if let Ok(message) = self.stream.get(found).await {
                        writer.write_parts(&EntryParts {
                            name: &message.subject,
                            timestamp_ns: message.timestamp_ns,
                            sequence: found,
                            headers: &message.headers,
                            payload: &message.payload,
                        });
                    }
                    self.next_seq = found + 1;
                }
                None => self.framed = self.writer.take().expect("still writing").finish(),
            }
        }
        let framed = match self.writer.as_mut() {
            Some(writer) => writer.framed_mut(),
            None => &mut self.framed,
        };
        if framed.is_empty() {
            return None;
        }
        // The chunk keeps the buffer; the few bytes past it move to a new one with room
        // for the next chunk, so that encoding into it does not grow it step by step.
        let cut = len.min(framed.len());
        let mut rest = Vec::with_capacity(len + 2 * ENCODE_CHUNK_BYTES);
        rest.extend_from_slice(&framed[cut..]);
        framed.truncate(cut);
        let chunk = std::mem::replace(framed, rest);
        // The reads ahead that producing this chunk started are only queued: glommio hands
        // them to the kernel at its next reactor turn, which a task that never waits does
        // not reach while others keep the shard busy. Without this turn per chunk the
        // reader found each read-ahead unsubmitted and the disk idle most of the time (a
        // 1 GiB snapshot waited ~1 s of its ~2 s on reads; perf/backup.md, 2026-12-06).
        glommio::timer::sleep(REACTOR_TURN).await;
        Some(chunk)
    }
}

/// A consumer entry: the consumer's config and the state restore starts it from.
#[derive(serde::Serialize)]
struct ConsumerEntryBody<'a> {
    config: &'a crate::jetstream::consumer_config::ConsumerConfig,
    state: ConsumerEntryState,
}

#[derive(serde::Serialize)]
struct ConsumerEntryState {
    delivered: Position,
    ack_floor: Position,
}

#[derive(serde::Serialize)]
struct Position {
    consumer_seq: u64,
    stream_seq: u64,
}

impl StreamService {
    /// The snapshot response, and the archive to send when the snapshot began.
    pub async fn snapshot(&self, name: &str, body: &[u8]) -> (Vec<u8>, Option<Snapshot>) {
        match self.build_snapshot(name, body).await {
            Ok((body, snapshot)) => {
                (encode_reply(ResponseType::StreamSnapshot, &Ok::<_, ApiError>(body)), Some(snapshot))
            }
            Err(error) => (encode_reply::<()>(ResponseType::StreamSnapshot, &Err(error)), None),
        }
    }

    async fn build_snapshot(&self, name: &str, body: &[u8]) -> Result<(SnapshotBody, Snapshot), ApiError> {
        let request = decode_snapshot_request(body)?;
        let record = self.record(name)?;
        let stream = self.engine.stream(name).map_err(|e| convert::api_error(&e))?;
        let consumers = if request.no_consumers { Vec::new() } else { self.consumer_infos(name) };
        let engine_state = stream.state();
        let state = convert::wire_state(&engine_state, Default::default(), consumers.len() as u64);
        let mut writer = ArchiveWriter::new();
        let state_json = serde_json::to_vec(&state).expect("a stream state serialises");
        writer.write(&Entry { payload: state_json, ..entry(STATE_ENTRY, self.engine.now_ns(), 0) });
        for info in &consumers {
            writer.write(&consumer_entry(info, state.last_seq));
        }
        let snapshot = Snapshot {
            request,
            stream,
            framed: Vec::new(),
            writer: Some(writer),
            next_seq: state.first_seq.max(1),
            last_seq: state.last_seq,
        };
        // The stored config, as nats-server's snapshot reply shows it (no `_nats.ver`).
        let config = record.config.clone();
        let reported = WireState { consumer_count: self.consumer_count_with_followers(name), ..state };
        Ok((SnapshotBody { config, state: reported }, snapshot))
    }

    fn consumer_infos(&self, stream: &str) -> Vec<ConsumerInfo> {
        let mut names = self.consumers.names_of(stream);
        names.sort();
        names.iter().filter_map(|name| self.consumer_info_named(stream, name).ok()).collect()
    }
}

/// nats-server's rules: no body or no deliver subject is a bad request.
fn decode_snapshot_request(body: &[u8]) -> Result<SnapshotRequest, ApiError> {
    let value = parse_body(body)?.ok_or_else(ApiError::bad_request)?;
    let request: SnapshotRequest = serde_json::from_value(value).map_err(|_| ApiError::bad_request())?;
    if request.deliver_subject.is_empty() {
        return Err(ApiError::bad_request());
    }
    Ok(request)
}

fn entry(name: &str, timestamp_ns: i64, sequence: u64) -> Entry {
    Entry { name: name.to_string(), timestamp_ns, sequence, headers: Vec::new(), payload: Vec::new() }
}

/// The consumer's entry. With messages awaiting ack, delivery rolls back to the ack floor
/// (the backup does not list them), and stream sequences are capped at the backup's last.
fn consumer_entry(info: &ConsumerInfo, last_seq: u64) -> Entry {
    let position =
        |at: &SequenceInfo| Position { consumer_seq: at.consumer_seq, stream_seq: at.stream_seq.min(last_seq) };
    let delivered = if info.num_ack_pending > 0 { &info.ack_floor } else { &info.delivered };
    let mut config = info.config.clone();
    metadata::remove_server_info(&mut config.metadata);
    let body = ConsumerEntryBody {
        config: &config,
        state: ConsumerEntryState { delivered: position(delivered), ack_floor: position(&info.ack_floor) },
    };
    let payload = serde_json::to_vec(&body).expect("a consumer config serialises");
    Entry { payload, ..entry(&format!("{CONSUMER_PREFIX}{}", info.name), 0, 0) }
}
