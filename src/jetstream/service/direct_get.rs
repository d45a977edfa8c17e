//! `$JS.API.DIRECT.GET` (ADR-31): messages answered as messages, not JSON. KV `get` uses
//! the subject form (`DIRECT.GET.<stream>.<subject>`, empty body); `get` at a revision
//! uses `{"seq":N}`. Batches (`batch`, `max_bytes`) and `multi_last` answer with several
//! messages carrying `Nats-Num-Pending` / `Nats-Last-Sequence` and end with a
//! `204 EOB` status. Errors are statuses, with nats-server 2.15.1's texts and choices
//! (recorded): `404 Message Not Found`, `404 No Results`, `408 Empty Request`,
//! `408 Malformed Request`, `408 Bad Request`.

use bytes::Bytes;

use super::requests::ApiReply;
use super::StreamService;
use crate::jetstream::stream_api::{MessageSelector, MsgGetRequest};
use crate::jetstream::Timestamp;
use crate::protocol::headers::{encode_status, parse_header_block, HeaderBlockBuilder};
use crate::stream::{StoredMessage, Stream};

/// What a direct get asks for, once its options make sense.
enum DirectRequest<'a> {
    One(MessageSelector<'a>),
    /// Up to `count` messages from `from`, on `filter` (any subject when `None`).
    Batch {
        from: u64,
        filter: Option<&'a str>,
        count: usize,
        max_bytes: usize,
    },
    /// The last message of each subject matching `filters`, at or below `up_to`.
    MultiLast {
        filters: &'a [String],
        up_to: Option<u64>,
        up_to_time: Option<Timestamp>,
        count: usize,
    },
}

/// Where a batch stands after a message: how many more match, and what was sent last.
struct BatchPosition {
    pending: u64,
    last_seq: u64,
}

impl StreamService {
    /// Answers a direct get on stream `name` this shard owns.
    pub(super) async fn direct_get(&self, name: &str, last_by_subject: Option<&str>, body: &[u8]) -> ApiReply {
        let Ok(stream) = self.engine.stream(name) else { return status(404, "Message Not Found") };
        let decoded = match decode(body) {
            Ok(decoded) => decoded,
            Err(reply) => return reply,
        };
        let request = match (last_by_subject, decoded.as_ref()) {
            (Some(subject), None) => DirectRequest::One(MessageSelector::LastBySubject(subject)),
            (Some(_), Some(_)) => return status(408, "Bad Request"),
            (None, None) => return status(408, "Empty Request"),
            (None, Some(request)) => match classify(request) {
                Some(request) => request,
                None => return status(408, "Bad Request"),
            },
        };
        match request {
            DirectRequest::One(selector) => match self.select(name, selector).await {
                Ok(message) => {
                    ApiReply::Message { headers: message_headers(name, &message, None), payload: message.payload }
                }
                Err(_) => status(404, "Message Not Found"),
            },
            DirectRequest::Batch { from, filter, count, max_bytes } => {
                batch(name, &stream, from, filter, count, max_bytes).await
            }
            DirectRequest::MultiLast { filters, up_to, up_to_time, count } => {
                let up_to = resolve_up_to(&stream, up_to, up_to_time);
                let seqs = stream.last_per_subject_at(up_to, filters);
                multi_last(name, &stream, &seqs[..seqs.len().min(count)], up_to).await
            }
        }
    }
}

/// The request body: `None` when empty or without any option (`null`, `{}`); an `Err`
/// status when it is not JSON.
fn decode(body: &[u8]) -> Result<Option<MsgGetRequest>, ApiReply> {
    if body.is_empty() {
        return Ok(None);
    }
    match serde_json::from_slice::<Option<MsgGetRequest>>(body) {
        Ok(request) => Ok(request.filter(|request| *request != MsgGetRequest::default())),
        Err(_) => Err(status(408, "Malformed Request")),
    }
}

/// Which kind of direct get a decoded body asks for; `None` for a bad combination.
fn classify(request: &MsgGetRequest) -> Option<DirectRequest<'_>> {
    let count = usize::try_from(request.batch.max(0)).unwrap_or(usize::MAX);
    if !request.multi_last.is_empty() {
        if request.seq > 0 || !request.last_by_subj.is_empty() || !request.next_by_subj.is_empty() {
            return None;
        }
        let up_to = (request.up_to_seq > 0).then_some(request.up_to_seq);
        let count = if count == 0 { usize::MAX } else { count };
        return Some(DirectRequest::MultiLast {
            filters: &request.multi_last,
            up_to,
            up_to_time: request.up_to_time,
            count,
        });
    }
    let selector = request.selector().ok()?;
    if count == 0 {
        return Some(DirectRequest::One(selector));
    }
    let max_bytes = usize::try_from(request.max_bytes.max(0)).unwrap_or(usize::MAX);
    let max_bytes = if max_bytes == 0 { usize::MAX } else { max_bytes };
    let (from, filter) = match selector {
        MessageSelector::Sequence(seq) => (seq, None),
        MessageSelector::NextBySubject { subject, from_seq } => (from_seq.max(1), Some(subject)),
        MessageSelector::FirstAtOrAfter { .. } | MessageSelector::LastBySubject(_) => return None,
    };
    Some(DirectRequest::Batch { from, filter, count, max_bytes })
}

/// `multi_last`'s bound: `up_to_seq`, else the last message stored at or before
/// `up_to_time`, else the stream's last sequence.
fn resolve_up_to(stream: &Stream, up_to: Option<u64>, up_to_time: Option<Timestamp>) -> u64 {
    if let Some(seq) = up_to {
        return seq;
    }
    match up_to_time.and_then(|time| time.unix_nanos()) {
        Some(nanos) => stream.seq_at_time(nanos.saturating_add(1)).saturating_sub(1),
        None => stream.last_seq(),
    }
}

async fn batch(
    name: &str,
    stream: &Stream,
    from: u64,
    filter: Option<&str>,
    count: usize,
    max_bytes: usize,
) -> ApiReply {
    let filters: Vec<String> = filter.map(str::to_string).into_iter().collect();
    let mut replies = Vec::new();
    let mut position = BatchPosition { pending: 0, last_seq: 0 };
    let mut sent_bytes = 0usize;
    let mut next = from;
    while replies.len() < count && sent_bytes < max_bytes {
        let Some(seq) = stream.next_seq(next, filter) else { break };
        let Ok(message) = stream.get(seq).await else { break };
        let pending = stream.count_matching(seq + 1, stream.last_seq(), &filters);
        sent_bytes += message.subject.len() + message.headers.len() + message.payload.len();
        let headers = message_headers(name, &message, Some(&BatchPosition { pending, last_seq: position.last_seq }));
        replies.push((headers, message.payload));
        position = BatchPosition { pending, last_seq: seq };
        next = seq + 1;
    }
    if replies.is_empty() {
        return status(404, "Message Not Found");
    }
    replies.push((end_of_batch(&position, None), Bytes::new()));
    ApiReply::Batch(replies)
}

async fn multi_last(name: &str, stream: &Stream, seqs: &[u64], up_to: u64) -> ApiReply {
    let mut replies = Vec::with_capacity(seqs.len() + 1);
    let mut position = BatchPosition { pending: 0, last_seq: 0 };
    for (index, seq) in seqs.iter().enumerate() {
        let Ok(message) = stream.get(*seq).await else { continue };
        let pending = (seqs.len() - index - 1) as u64;
        let headers = message_headers(name, &message, Some(&BatchPosition { pending, last_seq: position.last_seq }));
        replies.push((headers, message.payload));
        position = BatchPosition { pending, last_seq: *seq };
    }
    if replies.is_empty() {
        return status(404, "No Results");
    }
    replies.push((end_of_batch(&position, Some(up_to)), Bytes::new()));
    ApiReply::Batch(replies)
}

/// The stored headers, then `Nats-Stream`, `Nats-Subject`, `Nats-Sequence`,
/// `Nats-Time-Stamp` (RFC 3339, nanoseconds, UTC) and, in a batch, its position.
fn message_headers(stream: &str, message: &StoredMessage, position: Option<&BatchPosition>) -> Vec<u8> {
    let mut headers = Vec::with_capacity(message.headers.len() + 160);
    let stored = parse_header_block(&message.headers).ok();
    let sequence = message.seq.to_string();
    let time = Timestamp::from_unix_nanos(message.timestamp_ns).to_string();
    let mut builder = HeaderBlockBuilder::new(&mut headers);
    if let Some(stored) = &stored {
        for (name, value) in stored.iter() {
            builder.header(name, value);
        }
    }
    builder
        .header(b"Nats-Stream", stream.as_bytes())
        .header(b"Nats-Subject", message.subject.as_bytes())
        .header(b"Nats-Sequence", sequence.as_bytes())
        .header(b"Nats-Time-Stamp", time.as_bytes());
    if let Some(position) = position {
        builder
            .header(b"Nats-Num-Pending", position.pending.to_string().as_bytes())
            .header(b"Nats-Last-Sequence", position.last_seq.to_string().as_bytes());
    }
    builder.finish();
    headers
}

/// `204 EOB` closing a batch: what is still pending and the last sequence sent (and the
/// bound a `multi_last` used).
fn end_of_batch(position: &BatchPosition, up_to: Option<u64>) -> Vec<u8> {
    let mut headers = Vec::with_capacity(96);
    let mut builder = HeaderBlockBuilder::with_status(&mut headers, 204, "EOB");
    builder
        .header(b"Nats-Num-Pending", position.pending.to_string().as_bytes())
        .header(b"Nats-Last-Sequence", position.last_seq.to_string().as_bytes());
    if let Some(up_to) = up_to {
        builder.header(b"Nats-UpTo-Sequence", up_to.to_string().as_bytes());
    }
    builder.finish();
    headers
}

pub(super) fn status(code: u16, description: &str) -> ApiReply {
    let mut headers = Vec::new();
    encode_status(&mut headers, code, description);
    ApiReply::Message { headers, payload: Bytes::new() }
}
