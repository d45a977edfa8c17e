//! The client's own ceiling for issue 20's "publish, then pull consume" through async-nats
//! (`asyncnats_js`'s phases, `js/phases.rs`), against a stand-in JetStream on a thread of
//! this process that stores nothing: it answers the stream and consumer creates with
//! nats-server's replies, acks each publish the moment it has read it, and answers each
//! pull request with ready-made deliveries. What the client reaches here is the most any
//! server can show it.
//!
//! With a directory, the stand-in is durable the way a group commit is: the publishes of
//! each read are made durable with one `pwritev2(RWF_DSYNC)` of their bytes (whole 4 KiB
//! blocks, into a file whose blocks are written, `block_file.rs`) before their acks go out.
//! What the client reaches then is the most a server that acks after the disk can show it.
//!
//! Usage: js_ceiling [MESSAGES] [SIZE] [DIR]   (defaults 200000 128, not durable)
//! Prints one JSON line: {"client":"async-nats-ceiling","publish_msgs_per_s":..,"consume_msgs_per_s":..}
//! ("async-nats-durable-ceiling" with a directory).

#[allow(dead_code, reason = "shared with disk-floor; this stand-in never fills its buffer")]
#[path = "../src/block_file.rs"]
mod block_file;
#[path = "js/phases.rs"]
mod phases;
#[path = "standin/connection.rs"]
mod standin;

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::net::TcpListener;
use std::path::PathBuf;

use serde_json::{json, Value};

use block_file::{prepare, AlignedBlock, BLOCK_BYTES, FILE_BYTES};
use standin::{Connection, Handler, Publish};

const STREAM: &str = "CEILING";
const CONSUMER: &str = "asyncnats";
/// Deliveries written per pump at most, so that the client's pull requests are read in
/// between, as a server interleaves them.
const DELIVERIES_PER_PUMP: u64 = 4096;
/// A stored record's bytes besides its subject and payload (length, checksum, sequence,
/// time, field lengths), about what jetcore's take.
const RECORD_OVERHEAD_BYTES: usize = 40;
/// The most one durable write takes; a bigger group is written in several.
const GROUP_WRITE_BYTES_MAX: usize = 1024 * 1024;
const DURABLE_FILE_NAME: &str = ".js-ceiling-durable";

#[tokio::main]
async fn main() -> Result<(), phases::Failure> {
    let mut arguments = std::env::args().skip(1);
    let messages: u64 = arguments.next().map(|text| text.parse()).transpose()?.unwrap_or(200_000);
    let size: usize = arguments.next().map(|text| text.parse()).transpose()?.unwrap_or(128);
    let dir: Option<PathBuf> = arguments.next().map(PathBuf::from);
    let client_name = if dir.is_some() { "async-nats-durable-ceiling" } else { "async-nats-ceiling" };
    // The file is prepared here (it takes a while); the group's buffer on the server's thread.
    let durable = dir.as_ref().map(|dir| prepare(&dir.join(DURABLE_FILE_NAME), true)).transpose()?;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("nats://{}", listener.local_addr()?);
    let server = std::thread::spawn(move || StandIn::serve(&listener, messages, durable));
    let client = async_nats::connect(url.as_str()).await?;
    let (publish, consume, received) = phases::publish_then_consume(client, STREAM, messages, size).await?;
    server.join().map_err(|_| "the stand-in server panicked")??;
    if let Some(dir) = &dir {
        let _ = std::fs::remove_file(dir.join(DURABLE_FILE_NAME));
    }
    println!(
        "{{\"client\":\"{client_name}\",\"messages\":{messages},\"received\":{received},\
         \"publish_msgs_per_s\":{publish:.0},\"consume_msgs_per_s\":{consume:.0}}}"
    );
    Ok(())
}

/// The stand-in: sequences, payloads it was sent, and the open pull requests.
struct StandIn {
    messages: u64,
    subject: String,
    /// The payload of the last publish (every publish of the benchmark has the same one).
    payload: Vec<u8>,
    stored: u64,
    delivered: u64,
    /// (reply inbox, messages it still asks for).
    pulls: VecDeque<(String, u64)>,
    /// With a directory: the group of this read, acked once it is durable.
    durable: Option<GroupCommit>,
}

impl StandIn {
    fn serve(listener: &TcpListener, messages: u64, durable: Option<File>) -> io::Result<()> {
        let durable = durable.map(GroupCommit::new);
        let connection = Connection::accept(listener)?;
        let subject = format!("{STREAM}.data");
        let pulls = VecDeque::new();
        let mut stand_in = StandIn { messages, subject, payload: Vec::new(), stored: 0, delivered: 0, pulls, durable };
        connection.serve(&mut stand_in)
    }
}

/// One read's publishes, made durable together (a group commit) before their acks.
struct GroupCommit {
    file: File,
    buffer: AlignedBlock,
    /// Where the next group goes; groups are written round the file.
    offset: u64,
    /// The group's record bytes so far.
    bytes: usize,
    /// (reply inbox, sequence) of each publish of the group.
    acks: Vec<(String, u64)>,
}

impl GroupCommit {
    fn new(file: File) -> GroupCommit {
        GroupCommit { file, buffer: AlignedBlock::new(GROUP_WRITE_BYTES_MAX), offset: 0, bytes: 0, acks: Vec::new() }
    }

    /// Writes the group's bytes (whole blocks) durably, at most a buffer at a time.
    fn write(&mut self) -> io::Result<()> {
        let mut left = self.bytes.div_ceil(BLOCK_BYTES) * BLOCK_BYTES;
        while left > 0 {
            let len = left.min(GROUP_WRITE_BYTES_MAX);
            if self.offset + len as u64 > FILE_BYTES {
                self.offset = 0;
            }
            self.buffer.write_at(&self.file, len, self.offset, libc::RWF_DSYNC)?;
            self.offset += len as u64;
            left -= len;
        }
        self.bytes = 0;
        Ok(())
    }
}

fn now() -> String {
    "2026-01-01T00:00:00.000000000Z".to_string()
}

fn answer(connection: &mut Connection, reply: &str, body: Value) -> io::Result<()> {
    connection.message(reply, None, body.to_string().as_bytes())
}

impl Handler for StandIn {
    fn publish(&mut self, connection: &mut Connection, publish: Publish<'_>) -> io::Result<()> {
        let Publish { subject, reply, payload } = publish;
        let Some(reply) = reply else { return Ok(()) };
        if subject == self.subject {
            self.stored += 1;
            if self.payload.len() != payload.len() {
                self.payload = payload.to_vec();
            }
            if let Some(group) = &mut self.durable {
                group.bytes += RECORD_OVERHEAD_BYTES + subject.len() + payload.len();
                group.acks.push((reply.to_string(), self.stored));
                return Ok(());
            }
            let ack = format!(r#"{{"stream":"{STREAM}","seq":{}}}"#, self.stored);
            connection.message(reply, None, ack.as_bytes())
        } else if subject == format!("$JS.API.STREAM.CREATE.{STREAM}") {
            let config: Value = serde_json::from_slice(payload).unwrap_or_default();
            let zero = "0001-01-01T00:00:00Z";
            let state = json!({"messages": 0, "bytes": 0, "first_seq": 0, "first_ts": zero, "last_seq": 0,
                "last_ts": zero, "consumer_count": 0});
            let body = json!({"type": "io.nats.jetstream.api.v1.stream_create_response", "config": config,
                "created": now(), "state": state, "ts": now(), "did_create": true});
            answer(connection, reply, body)
        } else if subject.starts_with(&format!("$JS.API.CONSUMER.CREATE.{STREAM}")) {
            let request: Value = serde_json::from_slice(payload).unwrap_or_default();
            let position = json!({"consumer_seq": 0, "stream_seq": 0});
            let body = json!({"type": "io.nats.jetstream.api.v1.consumer_create_response", "stream_name": STREAM,
                "name": CONSUMER, "created": now(), "config": request["config"], "delivered": position,
                "ack_floor": position, "num_ack_pending": 0, "num_redelivered": 0, "num_waiting": 0,
                "num_pending": self.stored, "ts": now()});
            answer(connection, reply, body)
        } else if subject == format!("$JS.API.CONSUMER.MSG.NEXT.{STREAM}.{CONSUMER}") {
            let request: Value = serde_json::from_slice(payload).unwrap_or_default();
            let batch = request["batch"].as_u64().unwrap_or(1);
            self.pulls.push_back((reply.to_string(), batch));
            Ok(())
        } else {
            Ok(())
        }
    }

    /// Acks the read's group once it is durable, then answers the open pull requests,
    /// oldest first.
    fn pump(&mut self, connection: &mut Connection) -> io::Result<()> {
        if let Some(group) = self.durable.as_mut().filter(|group| !group.acks.is_empty()) {
            group.write()?;
            for (reply, sequence) in group.acks.drain(..) {
                let ack = format!(r#"{{"stream":"{STREAM}","seq":{sequence}}}"#);
                connection.message(&reply, None, ack.as_bytes())?;
            }
        }
        let mut budget = DELIVERIES_PER_PUMP;
        while let Some((inbox, wanted)) = self.pulls.front_mut() {
            while *wanted > 0 && budget > 0 && self.delivered < self.stored {
                self.delivered += 1;
                *wanted -= 1;
                budget -= 1;
                let (seq, pending) = (self.delivered, self.stored - self.delivered);
                let ack = format!("$JS.ACK.{STREAM}.{CONSUMER}.1.{seq}.{seq}.1764900000000000000.{pending}");
                connection.deliver(inbox, &self.subject, Some(&ack), &self.payload)?;
            }
            if *wanted > 0 {
                break;
            }
            self.pulls.pop_front();
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.messages > 0 && self.delivered == self.messages
    }
}
