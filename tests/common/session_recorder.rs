//! A recording proxy between NATS clients and a server, for comparing what two servers
//! answer to the same client session (`tests/client_sessions_vs_nats.rs`).
//!
//! Every byte passes through unchanged. On the way up, each PUB/HPUB that carries a reply
//! subject is an exchange (a JetStream publish, an API request, an ack that wants an
//! answer); on the way down, each MSG/HMSG sent to such a reply subject is one of its
//! replies, and every other message to an `_INBOX` subject is a push delivery. Idle
//! heartbeats and flow-control requests (status 100) are left out: their number depends on
//! timing, not on the server.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// One message as it crossed the proxy.
#[derive(Clone, Debug)]
pub struct Message {
    pub subject: String,
    pub reply: Option<String>,
    /// The header block as sent (`NATS/1.0 ...\r\n...`), if any.
    pub headers: Option<String>,
    pub payload: Vec<u8>,
}

/// A request (anything published with a reply subject) and what came back to it.
#[derive(Clone, Debug)]
pub struct Exchange {
    pub request: Message,
    pub replies: Vec<Message>,
}

#[derive(Default)]
pub struct Log {
    pub exchanges: Vec<Exchange>,
    /// Messages to `_INBOX` subjects that answer no recorded request (push consumers).
    pub pushed: Vec<Message>,
    by_reply: HashMap<String, usize>,
}

/// Listens on a loopback port and relays every connection to `upstream`.
pub struct Recorder {
    pub port: u16,
    log: Arc<Mutex<Log>>,
}

/// The server on `port`, tried for up to 5 s.
fn connect_upstream(port: u16) -> Option<TcpStream> {
    for _ in 0..100 {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(server) => return Some(server),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
    None
}

impl Recorder {
    pub fn start(upstream_port: u16) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Log::default()));
        let accept_log = log.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                // A loaded machine (CI) may refuse a connect for a moment: a client is
                // dropped only if the server stays unreachable, and the next still served.
                let Some(server) = connect_upstream(upstream_port) else { continue };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let subscriptions = Subscriptions::default();
                let up = (client.try_clone().unwrap(), server.try_clone().unwrap());
                relay(up.0, up.1, Direction::Up, accept_log.clone(), subscriptions.clone());
                relay(server, client, Direction::Down, accept_log.clone(), subscriptions);
            }
        });
        Recorder { port, log }
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// What was recorded so far (the session should have ended).
    pub fn take(&self) -> Log {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Direction {
    /// Client to server: requests.
    Up,
    /// Server to client: replies and deliveries.
    Down,
}

/// One connection's subscriptions, sid → subject: a message reaches a subscription by
/// its sid, and a JetStream delivery keeps its stored subject (`MSG orders.1 7 $JS.ACK…`),
/// so the subscription's subject is what says which request it answers.
type Subscriptions = Arc<Mutex<HashMap<String, String>>>;

/// Copies `from` to `to` on a thread of its own, recording the messages it sees. A
/// request is recorded before it is forwarded, so its reply always finds it.
fn relay(mut from: TcpStream, mut to: TcpStream, direction: Direction, log: Arc<Mutex<Log>>, subs: Subscriptions) {
    std::thread::spawn(move || {
        let mut parser = Parser { subscriptions: subs, ..Parser::default() };
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let read = match from.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            parser.buffer.extend_from_slice(&chunk[..read]);
            while let Some((message, to)) = parser.next_message() {
                record(&log, direction, message, to);
            }
            if to.write_all(&chunk[..read]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Both);
    });
}

/// `to`: for a message going down, the subject of the subscription it was sent to.
fn record(log: &Mutex<Log>, direction: Direction, message: Message, to: Option<String>) {
    let mut log = log.lock().unwrap();
    match direction {
        Direction::Up => {
            let Some(reply) = message.reply.clone() else { return };
            let index = log.exchanges.len();
            log.by_reply.insert(reply, index);
            log.exchanges.push(Exchange { request: message, replies: Vec::new() });
        }
        Direction::Down => {
            if status_code(&message) == Some(100) {
                return;
            }
            let answered = [Some(&message.subject), to.as_ref()]
                .into_iter()
                .flatten()
                .find_map(|subject| log.by_reply.get(subject).copied());
            if let Some(index) = answered {
                log.exchanges[index].replies.push(message);
            } else if to.as_deref().unwrap_or(&message.subject).starts_with("_INBOX.") {
                log.pushed.push(message);
            }
        }
    }
}

/// The status of a header block (`NATS/1.0 404 No Messages` is 404), if it has one.
pub fn status_code(message: &Message) -> Option<u16> {
    let first = message.headers.as_deref()?.lines().next()?;
    first.split_whitespace().nth(1)?.parse().ok()
}

/// Splits a byte stream into protocol operations; keeps only messages (PUB, HPUB, MSG,
/// HMSG), dropping the rest (CONNECT, INFO, SUB, PING, ...).
#[derive(Default)]
struct Parser {
    buffer: Vec<u8>,
    subscriptions: Subscriptions,
}

impl Parser {
    /// The next message, and (going down) the subject of the subscription it was sent to.
    fn next_message(&mut self) -> Option<(Message, Option<String>)> {
        loop {
            let line_end = self.buffer.windows(2).position(|pair| pair == b"\r\n")?;
            let line = String::from_utf8_lossy(&self.buffer[..line_end]).into_owned();
            let words: Vec<&str> = line.split_whitespace().collect();
            let op = words.first().map(|op| op.to_ascii_uppercase()).unwrap_or_default();
            // PUB subject [reply] size; HPUB subject [reply] hsize tsize; MSG subject sid
            // [reply] size; HMSG subject sid [reply] hsize tsize.
            let skip = usize::from(op == "MSG" || op == "HMSG");
            let with_headers = op == "HPUB" || op == "HMSG";
            if op == "SUB" && words.len() >= 3 {
                let sid = words[words.len() - 1].to_string();
                self.subscriptions.lock().unwrap().insert(sid, words[1].to_string());
            }
            if !matches!(op.as_str(), "PUB" | "HPUB" | "MSG" | "HMSG") {
                self.buffer.drain(..line_end + 2);
                continue;
            }
            let to = (skip == 1).then(|| self.subscriptions.lock().unwrap().get(words[2]).cloned()).flatten();
            let sizes = if with_headers { 2 } else { 1 };
            let reply = (words.len() == 2 + skip + sizes + 1).then(|| words[2 + skip].to_string());
            let numbers: Vec<usize> = words[words.len() - sizes..].iter().map(|n| n.parse().unwrap()).collect();
            let total = *numbers.last().unwrap();
            let start = line_end + 2;
            if self.buffer.len() < start + total + 2 {
                return None;
            }
            let body = &self.buffer[start..start + total];
            let header_len = if with_headers { numbers[0] } else { 0 };
            let message = Message {
                subject: words[1].to_string(),
                reply,
                headers: with_headers.then(|| String::from_utf8_lossy(&body[..header_len]).into_owned()),
                payload: body[header_len..].to_vec(),
            };
            self.buffer.drain(..start + total + 2);
            return Some((message, to));
        }
    }
}
