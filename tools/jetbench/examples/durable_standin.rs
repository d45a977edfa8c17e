//! The durable stand-in: the floor under one-in-flight durable publishes *with a given
//! client* (issue 21). A NATS server that does nothing but what such a publish needs: it
//! reads a publish, makes one 4 KiB block durable with a blocking `pwritev2(RWF_DSYNC)`
//! into a file whose blocks are already written (`block_file.rs`, as disk-floor's
//! written ways), and answers with a pub ack, on the connection's own thread. That is the
//! durable echo (`src/echo.rs`) speaking NATS, so the benchmark's own client can be
//! pointed at it: jetbench `js-pub-sync` (a tokio client) and async-nats's KV put
//! (`examples/asyncnats_kv`) reach here the most any server that acks after the disk can
//! show them. Their rates against the echo's (a plain thread as the client) are the
//! clients' own cost.
//!
//! It answers just enough of `$JS.API` for those clients: `INFO` (account), `STREAM.CREATE`,
//! `STREAM.INFO` and `STREAM.DELETE`; any other API request gets an error. Streams are
//! names, subjects and a message count; nothing is stored but the blocks written.
//!
//! Usage: durable_standin PORT DIR   (listens on 127.0.0.1:PORT, writes DIR/.durable-standin;
//! runs until killed). perf/latency runs it as the server "standin".

#[path = "../src/block_file.rs"]
mod block_file;
#[path = "standin/connection.rs"]
mod standin;

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use block_file::{prepare, AlignedBlock, BLOCK_BYTES, FILE_BYTES};
use standin::{matches, Connection, Handler, Publish};

const FILE_NAME: &str = ".durable-standin";
const API_PREFIX: &str = "$JS.API.";
/// nats-server's error codes for a stream that does not exist.
const STREAM_NOT_FOUND: (u16, u32) = (404, 10059);
const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

fn main() -> io::Result<()> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let (Some(port), Some(dir)) = (arguments.first(), arguments.get(1)) else {
        eprintln!("usage: durable_standin PORT DIR");
        std::process::exit(2);
    };
    let port: u16 = port.parse().map_err(|_| io::Error::other(format!("not a port: {port}")))?;
    let file = prepare(&Path::new(dir).join(FILE_NAME), true)?;
    let shared = Arc::new(Shared { file, next_block: AtomicU64::new(0), streams: Mutex::new(HashMap::new()) });
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    eprintln!("durable_standin listening on 127.0.0.1:{port}");
    loop {
        let connection = Connection::accept(&listener)?;
        let shared = shared.clone();
        std::thread::spawn(move || {
            let mut handler = DurableStandIn { shared, block: AlignedBlock::new(BLOCK_BYTES) };
            let _ = connection.serve(&mut handler);
        });
    }
}

/// What every connection's thread shares.
struct Shared {
    file: File,
    /// The next block to write; blocks are taken round the file.
    next_block: AtomicU64,
    /// Stream name → (its config as created, messages acked).
    streams: Mutex<HashMap<String, (Value, u64)>>,
}

/// One connection's handler: its own aligned block to write from.
struct DurableStandIn {
    shared: Arc<Shared>,
    block: AlignedBlock,
}

impl DurableStandIn {
    /// Makes the next block durable, as jetcore's one-write way does.
    fn durable_write(&mut self, sequence: u64) -> io::Result<()> {
        let blocks = FILE_BYTES / BLOCK_BYTES as u64;
        let offset = (self.shared.next_block.fetch_add(1, Ordering::Relaxed) % blocks) * BLOCK_BYTES as u64;
        self.block.bytes_mut()[..8].copy_from_slice(&sequence.to_le_bytes());
        self.block.write_at(&self.shared.file, BLOCK_BYTES, offset, libc::RWF_DSYNC)
    }

    /// The stream whose subjects take `subject`, with its next sequence counted.
    fn store(&self, subject: &str) -> Option<(String, u64)> {
        let mut streams = self.shared.streams.lock().expect("stand-in state");
        let (name, (_, count)) = streams.iter_mut().find(|(_, (config, _))| {
            config["subjects"].as_array().is_some_and(|subjects| {
                subjects.iter().filter_map(Value::as_str).any(|pattern| matches(pattern, subject))
            })
        })?;
        *count += 1;
        Some((name.clone(), *count))
    }

    /// The answer to one `$JS.API` request.
    fn api(&self, request: &str, payload: &[u8]) -> Value {
        let mut streams = self.shared.streams.lock().expect("stand-in state");
        let (verb, name) = request.rsplit_once('.').map_or((request, ""), |(verb, name)| (verb, name));
        match (request, verb) {
            ("INFO", _) => json!({"type": "io.nats.jetstream.api.v1.account_info_response", "memory": 0,
                "storage": 0, "reserved_memory": 0, "reserved_storage": 0, "streams": streams.len(),
                "consumers": 0, "limits": {"max_memory": -1, "max_storage": -1, "max_streams": -1,
                "max_consumers": -1, "max_ack_pending": -1, "memory_max_stream_bytes": -1,
                "storage_max_stream_bytes": -1, "max_bytes_required": false}, "api": {"total": 0, "errors": 0}}),
            (_, "STREAM.CREATE") => {
                let config: Value = serde_json::from_slice(payload).unwrap_or_default();
                streams.insert(name.to_string(), (config.clone(), 0));
                info("io.nats.jetstream.api.v1.stream_create_response", &config, 0)
            }
            (_, "STREAM.INFO") => match streams.get(name) {
                Some((config, count)) => info("io.nats.jetstream.api.v1.stream_info_response", config, *count),
                None => error(STREAM_NOT_FOUND, "stream not found"),
            },
            (_, "STREAM.DELETE") => match streams.remove(name) {
                Some(_) => json!({"type": "io.nats.jetstream.api.v1.stream_delete_response", "success": true}),
                None => error(STREAM_NOT_FOUND, "stream not found"),
            },
            _ => error((400, 10025), &format!("the durable stand-in does not answer {API_PREFIX}{request}")),
        }
    }
}

/// A stream create or info response for a stream holding `count` messages.
fn info(kind: &str, config: &Value, count: u64) -> Value {
    let state = json!({"messages": count, "bytes": count * BLOCK_BYTES as u64, "first_seq": 1.min(count),
        "first_ts": ZERO_TIME, "last_seq": count, "last_ts": ZERO_TIME, "consumer_count": 0});
    json!({"type": kind, "config": config, "created": ZERO_TIME, "state": state, "ts": ZERO_TIME,
        "did_create": true})
}

fn error((code, err_code): (u16, u32), description: &str) -> Value {
    json!({"type": "io.nats.jetstream.api.v1.error", "error": {"code": code, "err_code": err_code,
        "description": description}})
}

impl Handler for DurableStandIn {
    fn publish(&mut self, connection: &mut Connection, publish: Publish<'_>) -> io::Result<()> {
        let Publish { subject, reply, payload } = publish;
        let Some(reply) = reply else { return Ok(()) };
        let answer = if let Some(request) = subject.strip_prefix(API_PREFIX) {
            self.api(request, payload).to_string()
        } else if let Some((stream, sequence)) = self.store(subject) {
            self.durable_write(sequence)?;
            format!(r#"{{"stream":"{stream}","seq":{sequence}}}"#)
        } else {
            return Ok(());
        };
        connection.message(reply, None, answer.as_bytes())
    }

    fn done(&self) -> bool {
        false
    }
}
