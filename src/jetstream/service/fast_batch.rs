//! Fast batch publish (ADR-50 "fast ingest", nats-server 2.14 `allow_batched`), the
//! service's bookkeeping: unlike an atomic batch (`batch.rs`) nothing is held back, each
//! message is stored as it comes, and the batch's flow control answers the publisher.
//!
//! A fast batch message is a publish whose reply subject ends in `.$FI`; the reply names
//! the batch, `<inbox>.<id>.<flow>.<gap>.<seq>.<op>.$FI`, and every answer to the message
//! goes to that reply. As nats-server 2.15.1 answers (recorded):
//! - start (`op` 0, `seq` 1): at once `{"type":"ack","seq":0,"msgs":F}`, `F` the flow
//!   (0 or not a number: 10; at most 500);
//! - once the batch's messages up to `last + F` are stored, `{"type":"ack","seq":N,"msgs":F}`
//!   with `N` the highest `last + k·F` reached (sent when durable, here);
//! - a sequence past the next one: `{"type":"gap","last_seq":expected,"seq":got}`; with
//!   gap mode `fail` the batch ends, with `ok` the message is stored and the batch goes on;
//!   a sequence before the next one ends the batch in either mode;
//! - a message the stream refuses: `{"type":"err","seq":N,"error":{..}}`; the batch ends
//!   unless the gap mode is `ok` (the first message's refusal is a plain pub ack error);
//! - commit (`op` 2: store it; `op` 3 "eob": do not) and every end above: one pub ack,
//!   `{"stream":S,"seq":last stored,"batch":id,"count":its batch sequence}`, sent once the
//!   batch's stored messages are durable;
//! - ping (`op` 4): the last flow ack again;
//! - a message of a batch not open: 10208; an unparsable reply: 10206; an id over 64 bytes:
//!   10207; a start past [`FAST_BATCHES_MAX`] open batches: 10211.
//!
//! A batch without a message for [`FAST_BATCH_IDLE_TIMEOUT`] is dropped without a word (no
//! advisory: nats-server 2.15.1 sends none for fast batches). nats-server also lowers the
//! ack frequency by itself under load (a slow start, 1, 2, 4, ... up to `F`, seen with many
//! batches open); jetcore keeps the publisher's `F`, which clients must accept (they follow
//! the `msgs` of each ack). The limit of open batches is per shard here, per server there.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::jetstream::errors::ApiError;
use crate::jetstream::pub_ack::encode_pub_ack_error;
use crate::jetstream::responses::encode_go_json;

/// How a fast batch's reply subject ends.
pub const FAST_BATCH_SUFFIX: &str = ".$FI";
/// Flow acks every this many messages when the publisher names none (or 0).
pub const FLOW_DEFAULT: u64 = 10;
/// The most messages between flow acks (a larger flow is lowered to this; recorded).
pub const FLOW_MAX: u64 = 500;
/// Open fast batches at most (nats-server: per server; here: per shard).
pub const FAST_BATCHES_MAX: usize = 1000;
/// A fast batch without a message this long is dropped.
pub const FAST_BATCH_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest batch id (recorded: 64 bytes pass, 65 are 10207).
pub const FAST_BATCH_ID_BYTES_MAX: usize = 64;

/// What a fast batch message asks for (the reply's `op` token).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Start,
    Append,
    /// Store this message and end the batch.
    Commit,
    /// End the batch without storing this message.
    CommitEob,
    /// Send the last flow ack again.
    Ping,
}

/// A parsed fast batch reply subject.
#[derive(Debug, PartialEq, Eq)]
pub struct FastReply<'a> {
    pub id: &'a str,
    pub flow: u64,
    pub gap_ok: bool,
    pub seq: u64,
    pub op: Operation,
}

/// Whether `reply` asks for fast batch handling.
pub fn is_fast_reply(reply: &str) -> bool {
    reply.ends_with(FAST_BATCH_SUFFIX)
}

/// Parses a reply for which [`is_fast_reply`] holds.
pub fn parse(reply: &str) -> Result<FastReply<'_>, ApiError> {
    let tokens: Vec<&str> = reply.split('.').collect();
    let Some(&[id, flow, gap, seq, op, _]) =
        tokens.len().checked_sub(6).filter(|&start| start > 0).map(|s| &tokens[s..])
    else {
        return Err(ApiError::batch_publish_invalid_pattern());
    };
    let invalid = ApiError::batch_publish_invalid_pattern;
    let gap_ok = match gap {
        "ok" => true,
        "fail" => false,
        _ => return Err(invalid()),
    };
    let seq = seq.parse::<u64>().ok().filter(|&seq| seq > 0).ok_or_else(invalid)?;
    let op = match op.parse::<u8>().map_err(|_| invalid())? {
        0 if seq == 1 => Operation::Start,
        1 => Operation::Append,
        2 => Operation::Commit,
        3 if seq > 1 => Operation::CommitEob,
        4 => Operation::Ping,
        _ => return Err(invalid()),
    };
    if id.is_empty() || id.len() > FAST_BATCH_ID_BYTES_MAX {
        return Err(ApiError::batch_publish_invalid_batch_id());
    }
    let flow = match flow.parse::<u64>() {
        Ok(0) | Err(_) => FLOW_DEFAULT,
        Ok(flow) => flow.min(FLOW_MAX),
    };
    Ok(FastReply { id, flow, gap_ok, seq, op })
}

/// What to do with a fast batch message that just came.
#[derive(Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Store it (its answer follows once it is durable, [`FastBatches::settle`]).
    pub store: bool,
    /// Sent to its reply now, in order (the last may be the batch's final pub ack).
    pub replies: Vec<Vec<u8>>,
}

/// A batch that ended: whether its final pub ack is owed, and where it goes.
enum Closing {
    Silent,
    FinalTo(String),
}

struct FastBatch {
    flow: u64,
    gap_ok: bool,
    /// The batch sequence expected next.
    next_seq: u64,
    /// Messages taken to be stored whose outcome is not known yet.
    in_flight: u64,
    /// The batch sequence the last flow ack named.
    last_ack: u64,
    /// The last message stored: (batch sequence, stream sequence).
    last_stored: Option<(u64, u64)>,
    /// The batch ended; it is dropped once nothing of it is in flight.
    closing: Option<Closing>,
    last_seen: Instant,
}

/// The open fast batches of one shard's streams, by (stream, batch id).
#[derive(Default)]
pub struct FastBatches {
    batches: HashMap<(String, String), FastBatch>,
}

/// An answer and the reply subject it goes to.
pub type Answer = (String, Vec<u8>);

impl FastBatches {
    /// Whether no batch is open (maintenance need not run to drop one).
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// Decides what a message of stream `stream` with fast batch reply `reply` (parsed as
    /// `fast`) does; `domain` is named in a final pub ack.
    pub fn arrive(&mut self, stream: &str, domain: &str, reply: &str, fast: &FastReply<'_>) -> Arrival {
        let key = (stream.to_string(), fast.id.to_string());
        let mut arrival = Arrival { store: false, replies: Vec::new() };
        let Some(batch) = self.batches.get_mut(&key).filter(|batch| batch.closing.is_none()) else {
            let starts = matches!(fast.op, Operation::Start | Operation::Commit) && fast.seq == 1;
            if self.batches.contains_key(&key) || !starts {
                arrival.replies.push(encode_pub_ack_error(stream, &ApiError::batch_publish_unknown_batch_id()));
                return arrival;
            }
            if self.batches.len() >= FAST_BATCHES_MAX {
                arrival.replies.push(encode_pub_ack_error(stream, &ApiError::batch_publish_too_many_inflight()));
                return arrival;
            }
            let commit = fast.op == Operation::Commit;
            let batch = FastBatch {
                flow: fast.flow,
                gap_ok: fast.gap_ok,
                next_seq: 2,
                in_flight: 1,
                last_ack: 0,
                last_stored: None,
                closing: commit.then(|| Closing::FinalTo(reply.to_string())),
                last_seen: Instant::now(),
            };
            if !commit {
                arrival.replies.push(flow_ack(0, batch.flow));
            }
            self.batches.insert(key, batch);
            arrival.store = true;
            return arrival;
        };
        batch.last_seen = Instant::now();
        if fast.op == Operation::Ping && fast.seq < batch.next_seq {
            arrival.replies.push(flow_ack(batch.last_ack, batch.flow));
            return arrival;
        }
        // A ping ahead stands for the message after the one it names.
        let seq = if fast.op == Operation::Ping { fast.seq + 1 } else { fast.seq };
        if seq != batch.next_seq {
            arrival.replies.push(gap(batch.next_seq, seq));
            if seq < batch.next_seq || !batch.gap_ok {
                batch.closing = Some(Closing::FinalTo(reply.to_string()));
                arrival.replies.extend(self.finish_if_settled(stream, domain, fast.id).map(|(_, ack)| ack));
                return arrival;
            }
        }
        batch.next_seq = seq + 1;
        match fast.op {
            Operation::Ping => {}
            Operation::CommitEob => {
                batch.closing = Some(Closing::FinalTo(reply.to_string()));
                arrival.replies.extend(self.finish_if_settled(stream, domain, fast.id).map(|(_, ack)| ack));
            }
            Operation::Start | Operation::Append | Operation::Commit => {
                if fast.op == Operation::Commit {
                    batch.closing = Some(Closing::FinalTo(reply.to_string()));
                }
                batch.in_flight += 1;
                arrival.store = true;
            }
        }
        arrival
    }

    /// A stored message's outcome is known (in publish order): `Ok(stream sequence)` or
    /// the refusal. Returns what goes where: flow acks or an `err` to its `reply`, and the
    /// batch's final pub ack when the batch ends with it.
    pub fn settle(
        &mut self,
        stream: &str,
        domain: &str,
        reply: &str,
        fast: &FastReply<'_>,
        outcome: Result<u64, ApiError>,
    ) -> Vec<Answer> {
        let key = (stream.to_string(), fast.id.to_string());
        // Dropped meanwhile (idle, or its stream changed): nobody waits for an answer.
        let Some(batch) = self.batches.get_mut(&key) else { return Vec::new() };
        batch.in_flight = batch.in_flight.saturating_sub(1);
        let mut replies = Vec::new();
        let answer = |payload: Vec<u8>| (reply.to_string(), payload);
        let committing = fast.op == Operation::Commit;
        match outcome {
            Ok(stream_seq) => {
                batch.last_stored = Some((fast.seq, stream_seq));
                // Messages stored before the batch ended are acked too; its commit is
                // answered by the final pub ack alone.
                if !committing && fast.seq >= batch.last_ack + batch.flow {
                    batch.last_ack = fast.seq - (fast.seq - batch.last_ack) % batch.flow;
                    replies.push(answer(flow_ack(batch.last_ack, batch.flow)));
                }
            }
            // Stored after the batch ended elsewhere: its end says what stands.
            Err(_) if batch.closing.is_some() && !committing => {}
            Err(error) if batch.gap_ok && fast.seq > 1 && !committing => {
                replies.push(answer(flow_error(fast.seq, &error)));
            }
            Err(error) if batch.last_stored.is_none() => {
                replies.push(answer(encode_pub_ack_error(stream, &error)));
                batch.closing = Some(Closing::Silent);
            }
            Err(error) => {
                replies.push(answer(flow_error(fast.seq, &error)));
                batch.closing = Some(Closing::FinalTo(reply.to_string()));
            }
        }
        replies.extend(self.finish_if_settled(stream, domain, fast.id));
        replies
    }

    /// Drops a batch that ended once nothing of it is in flight; its final pub ack, if owed.
    fn finish_if_settled(&mut self, stream: &str, domain: &str, id: &str) -> Option<Answer> {
        let key = (stream.to_string(), id.to_string());
        let batch = self.batches.get(&key)?;
        if batch.in_flight > 0 || batch.closing.is_none() {
            return None;
        }
        let batch = self.batches.remove(&key)?;
        match batch.closing {
            Some(Closing::FinalTo(reply)) => Some((reply, final_ack(stream, domain, id, batch.last_stored))),
            _ => None,
        }
    }

    /// Drops batches idle for [`FAST_BATCH_IDLE_TIMEOUT`], and every batch of a stream
    /// that no longer takes them (`allowed` is false) or is gone.
    pub fn abandon_idle(&mut self, allowed: impl Fn(&str) -> bool) {
        let now = Instant::now();
        self.batches.retain(|(stream, id), batch| {
            let keep = allowed(stream) && now.duration_since(batch.last_seen) < FAST_BATCH_IDLE_TIMEOUT;
            if !keep {
                tracing::debug!(stream, batch = id, "dropping fast batch");
            }
            keep
        });
    }
}

/// `{"type":"ack","seq":N,"msgs":F}`
fn flow_ack(seq: u64, flow: u64) -> Vec<u8> {
    format!(r#"{{"type":"ack","seq":{seq},"msgs":{flow}}}"#).into_bytes()
}

/// `{"type":"gap","last_seq":expected,"seq":got}`
fn gap(expected: u64, got: u64) -> Vec<u8> {
    format!(r#"{{"type":"gap","last_seq":{expected},"seq":{got}}}"#).into_bytes()
}

/// `{"type":"err","seq":N,"error":{..}}`
fn flow_error(seq: u64, error: &ApiError) -> Vec<u8> {
    let mut out = format!(r#"{{"type":"err","seq":{seq},"error":"#).into_bytes();
    out.extend_from_slice(&encode_go_json(error));
    out.push(b'}');
    out
}

/// The batch's pub ack: its last stored message and that message's batch sequence.
fn final_ack(stream: &str, domain: &str, id: &str, last_stored: Option<(u64, u64)>) -> Vec<u8> {
    let (count, seq) = last_stored.unwrap_or((0, 0));
    let ack = crate::jetstream::pub_ack::PubAck {
        stream: stream.to_string(),
        seq,
        domain: domain.to_string(),
        batch: Some((id.to_string(), count)),
        ..Default::default()
    };
    ack.encode()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(replies: &[Vec<u8>]) -> Vec<String> {
        replies.iter().map(|reply| String::from_utf8(reply.clone()).unwrap()).collect()
    }

    #[test]
    fn replies_parse_as_nats_server_reads_them() {
        let parsed = parse("_INBOX.abc.b1.3.ok.2.1.$FI").unwrap();
        assert_eq!(parsed, FastReply { id: "b1", flow: 3, gap_ok: true, seq: 2, op: Operation::Append });
        assert_eq!(parse("in.b.abc.fail.1.0.$FI").unwrap().flow, FLOW_DEFAULT);
        assert_eq!(parse("in.b.0.fail.1.0.$FI").unwrap().flow, FLOW_DEFAULT);
        assert_eq!(parse("in.b.65536.fail.1.0.$FI").unwrap().flow, FLOW_MAX);
        for bad in ["a.$FI", "b.3.fail.1.0.$FI", "in.b.3.FAIL.1.0.$FI", "in.b.3.fail.0.1.$FI", "in.b.3.fail.2.0.$FI"] {
            assert_eq!(parse(bad).unwrap_err().err_code, 10206, "{bad}");
        }
        assert_eq!(parse("in.b.3.fail.1.3.$FI").unwrap_err().err_code, 10206);
        let long = format!("in.{}.3.fail.1.0.$FI", "x".repeat(65));
        assert_eq!(parse(&long).unwrap_err().err_code, 10207);
    }

    #[test]
    fn a_gap_waits_for_what_is_in_flight_before_the_final_ack() {
        let mut batches = FastBatches::default();
        let start = parse("in.g.2.fail.1.0.$FI").unwrap();
        let arrival = batches.arrive("S", "", "in.g.2.fail.1.0.$FI", &start);
        assert!(arrival.store);
        assert_eq!(text(&arrival.replies), [r#"{"type":"ack","seq":0,"msgs":2}"#]);
        // Message 3 comes before message 1 is durable: the batch ends, its ack waits.
        let gap = parse("in.g.2.fail.3.1.$FI").unwrap();
        let arrival = batches.arrive("S", "", "in.g.2.fail.3.1.$FI", &gap);
        assert!(!arrival.store);
        assert_eq!(text(&arrival.replies), [r#"{"type":"gap","last_seq":2,"seq":3}"#]);
        let settled = batches.settle("S", "", "in.g.2.fail.1.0.$FI", &start, Ok(7));
        let answers: Vec<(String, String)> =
            settled.into_iter().map(|(to, body)| (to, String::from_utf8(body).unwrap())).collect();
        let final_ack = r#"{"stream":"S","seq":7,"batch":"g","count":1}"#.to_string();
        assert_eq!(answers, [("in.g.2.fail.3.1.$FI".to_string(), final_ack)]);
        assert!(batches.is_empty());
    }
}
