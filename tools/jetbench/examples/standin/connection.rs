//! The NATS side of a stand-in server: one client connection served on a plain thread,
//! enough of the protocol for an official client (INFO, CONNECT, PING, SUB, UNSUB, PUB,
//! HPUB; MSG back), so that a benchmark's client loop can run against a server that does
//! no work of its own and show the client's own ceiling (`backup_ceiling`, `js_ceiling`).

use std::io::{self, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};

const INFO: &str = concat!(
    r#"INFO {"server_id":"STANDIN","server_name":"standin","version":"2.15.1","proto":1,"#,
    r#""go":"none","host":"127.0.0.1","port":0,"headers":true,"jetstream":true,"max_payload":8388608}"#,
    "\r\n"
);

/// A client's publish, as the stand-in's handler gets it.
pub struct Publish<'a> {
    pub subject: &'a str,
    pub reply: Option<&'a str>,
    pub payload: &'a [u8],
}

/// What a stand-in does with the client's publishes.
pub trait Handler {
    /// Answers or records one publish (writing through `connection`).
    fn publish(&mut self, connection: &mut Connection, publish: Publish<'_>) -> io::Result<()>;
    /// Writes what is due after a batch of input (streams, deliveries); called once per read.
    fn pump(&mut self, _connection: &mut Connection) -> io::Result<()> {
        Ok(())
    }
    /// Whether the stand-in's work is done (it then stops reading).
    fn done(&self) -> bool;
}

/// The one connection: its output and the client's subscriptions.
pub struct Connection {
    socket: TcpStream,
    out: BufWriter<TcpStream>,
    /// (subject pattern, sid).
    subscriptions: Vec<(String, String)>,
}

/// One client operation.
enum Op {
    Ping,
    Sub { subject: String, sid: String },
    Pub { subject: String, reply: Option<String>, payload_at: usize, payload_end: usize },
    Other,
}

impl Connection {
    /// Accepts the client on `listener` and sends INFO.
    pub fn accept(listener: &TcpListener) -> io::Result<Connection> {
        let (socket, _) = listener.accept()?;
        socket.set_nodelay(true)?;
        let mut out = BufWriter::with_capacity(1 << 20, socket.try_clone()?);
        out.write_all(INFO.as_bytes())?;
        out.flush()?;
        Ok(Connection { socket, out, subscriptions: Vec::new() })
    }

    /// Reads and hands every publish to `handler` until it is done or the client hangs up.
    pub fn serve(mut self, handler: &mut dyn Handler) -> io::Result<()> {
        let mut buffer: Vec<u8> = Vec::with_capacity(4 << 20);
        let mut read = vec![0u8; 1 << 20];
        while !handler.done() {
            let count = self.socket.read(&mut read)?;
            if count == 0 {
                return Ok(());
            }
            buffer.extend_from_slice(&read[..count]);
            let mut at = 0;
            while let Some((op, used)) = parse(&buffer[at..]) {
                match op {
                    Op::Ping => self.out.write_all(b"PONG\r\n")?,
                    Op::Sub { subject, sid } => self.subscriptions.push((subject, sid)),
                    Op::Pub { subject, reply, payload_at, payload_end } => {
                        let payload = &buffer[at + payload_at..at + payload_end];
                        handler.publish(&mut self, Publish { subject: &subject, reply: reply.as_deref(), payload })?;
                    }
                    Op::Other => {}
                }
                at += used;
            }
            buffer.drain(..at);
            handler.pump(&mut self)?;
            self.out.flush()?;
        }
        Ok(())
    }

    /// Sends `payload` on `subject` to the client's subscription that matches it, if any.
    pub fn message(&mut self, subject: &str, reply: Option<&str>, payload: &[u8]) -> io::Result<()> {
        self.deliver(subject, subject, reply, payload)
    }

    /// Sends a message on `subject` to the subscription matching `inbox` (a JetStream
    /// delivery keeps its stored subject), if any.
    pub fn deliver(&mut self, inbox: &str, subject: &str, reply: Option<&str>, payload: &[u8]) -> io::Result<()> {
        let Some(sid) = self.sid_for(inbox) else { return Ok(()) };
        let reply = reply.map(|reply| format!(" {reply}")).unwrap_or_default();
        write!(self.out, "MSG {subject} {sid}{reply} {}\r\n", payload.len())?;
        self.out.write_all(payload)?;
        self.out.write_all(b"\r\n")
    }

    /// The sid of the first subscription matching `subject`.
    pub fn sid_for(&self, subject: &str) -> Option<String> {
        self.subscriptions.iter().find(|(pattern, _)| matches(pattern, subject)).map(|(_, sid)| sid.clone())
    }
}

/// NATS subject matching with `*` and `>`.
pub fn matches(pattern: &str, subject: &str) -> bool {
    let mut tokens = subject.split('.');
    for wanted in pattern.split('.') {
        match (wanted, tokens.next()) {
            (">", Some(_)) => return true,
            ("*", Some(_)) => {}
            (wanted, Some(token)) if wanted == token => {}
            _ => return false,
        }
    }
    tokens.next().is_none()
}

/// The operation at the start of `buffer` and the bytes it takes, once it is all there.
fn parse(buffer: &[u8]) -> Option<(Op, usize)> {
    let line_end = buffer.windows(2).position(|pair| pair == b"\r\n")?;
    let line = std::str::from_utf8(&buffer[..line_end]).ok()?;
    let mut words = line.split_ascii_whitespace();
    let verb = words.next().unwrap_or_default().to_ascii_uppercase();
    let words: Vec<&str> = words.collect();
    let after_line = line_end + 2;
    let op = match verb.as_str() {
        "PING" => Op::Ping,
        "SUB" => Op::Sub { subject: words[0].to_string(), sid: words[words.len() - 1].to_string() },
        "PUB" | "HPUB" => {
            let total: usize = words[words.len() - 1].parse().ok()?;
            if buffer.len() < after_line + total + 2 {
                return None;
            }
            let headers: usize = if verb == "HPUB" { words[words.len() - 2].parse().ok()? } else { 0 };
            let named = words.len() - if verb == "HPUB" { 2 } else { 1 };
            let reply = (named == 2).then(|| words[1].to_string());
            let subject = words[0].to_string();
            let op = Op::Pub { subject, reply, payload_at: after_line + headers, payload_end: after_line + total };
            return Some((op, after_line + total + 2));
        }
        _ => Op::Other,
    };
    Some((op, after_line))
}
