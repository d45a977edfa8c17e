//! The client's own ceiling for issue 20's "publish, then pull consume" through async-nats
//! (`asyncnats_js`'s phases, `js/phases.rs`), against a stand-in JetStream on a thread of
//! this process that stores nothing: it answers the stream and consumer creates with
//! nats-server's replies, acks each publish the moment it has read it, and answers each
//! pull request with ready-made deliveries. What the client reaches here is the most any
//! server can show it.
//!
//! Usage: js_ceiling [MESSAGES] [SIZE]   (defaults 200000 128)
//! Prints one JSON line: {"client":"async-nats-ceiling","publish_msgs_per_s":..,"consume_msgs_per_s":..}.

#[path = "js/phases.rs"]
mod phases;
#[path = "standin/connection.rs"]
mod standin;

use std::collections::VecDeque;
use std::io;
use std::net::TcpListener;

use serde_json::{json, Value};

use standin::{Connection, Handler, Publish};

const STREAM: &str = "CEILING";
const CONSUMER: &str = "asyncnats";
/// Deliveries written per pump at most, so that the client's pull requests are read in
/// between, as a server interleaves them.
const DELIVERIES_PER_PUMP: u64 = 4096;

#[tokio::main]
async fn main() -> Result<(), phases::Failure> {
    let mut arguments = std::env::args().skip(1);
    let messages: u64 = arguments.next().map(|text| text.parse()).transpose()?.unwrap_or(200_000);
    let size: usize = arguments.next().map(|text| text.parse()).transpose()?.unwrap_or(128);
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("nats://{}", listener.local_addr()?);
    let server = std::thread::spawn(move || StandIn::serve(&listener, messages));
    let client = async_nats::connect(url.as_str()).await?;
    let (publish, consume, received) = phases::publish_then_consume(client, STREAM, messages, size).await?;
    server.join().map_err(|_| "the stand-in server panicked")??;
    println!(
        "{{\"client\":\"async-nats-ceiling\",\"messages\":{messages},\"received\":{received},\
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
}

impl StandIn {
    fn serve(listener: &TcpListener, messages: u64) -> io::Result<()> {
        let connection = Connection::accept(listener)?;
        let subject = format!("{STREAM}.data");
        let mut stand_in =
            StandIn { messages, subject, payload: Vec::new(), stored: 0, delivered: 0, pulls: VecDeque::new() };
        connection.serve(&mut stand_in)
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

    /// Answers the open pull requests, oldest first.
    fn pump(&mut self, connection: &mut Connection) -> io::Result<()> {
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
