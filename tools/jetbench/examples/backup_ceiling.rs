//! The client's own ceiling for a backup's two transfers (issue 26's targets are rates of
//! a snapshot and a restore through async-nats). `asyncnats_backup`'s snapshot and restore
//! loops (`backup/transfer.rs`) run against a stand-in server on a thread of this process
//! that does no storage work: it answers `STREAM.SNAPSHOT` and streams ready-made 128 KiB
//! chunks with the same 8 MiB flow-control window as jetcore and nats-server, and acks
//! every restore chunk the moment it has read it. What the client reaches here is the
//! most any server can show it.
//!
//! Usage: backup_ceiling [MIB] [CHUNK_KIB]   (defaults 1024 128)
//! Prints one JSON line: {"client":"async-nats-backup-ceiling","snapshot_mib_per_s":..,..}.

#[path = "backup/transfer.rs"]
mod transfer;

use std::io::{self, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};

use serde_json::{json, Value};

use transfer::CHUNK_TIMEOUT;

const STREAM: &str = "CEILING";
/// Chunks awaiting their ack at most: nats-server's and jetcore's default window.
const WINDOW_BYTES: usize = 8 << 20;
const SNAPSHOT_ACK_PREFIX: &str = "$JS.SNAPSHOT.ACK.";
const UPLOAD_SUBJECT: &str = "$JS.RESTORE.IN.CEILING";
const INFO: &str = concat!(
    r#"INFO {"server_id":"CEILING","server_name":"ceiling","version":"2.15.1","proto":1,"#,
    r#""go":"none","host":"127.0.0.1","port":0,"headers":true,"max_payload":8388608}"#,
    "\r\n"
);

fn argument<T: std::str::FromStr>(arguments: &[String], index: usize, default: T) -> T {
    arguments.get(index).and_then(|text| text.parse().ok()).unwrap_or(default)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), transfer::Failure> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let bytes = argument::<usize>(&arguments, 0, 1024) << 20;
    let chunk_size = argument::<usize>(&arguments, 1, 128) << 10;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("nats://{}", listener.local_addr()?);
    let server = std::thread::spawn(move || StandIn::accept(&listener, bytes).and_then(StandIn::serve));

    let client = async_nats::ConnectOptions::new().request_timeout(Some(CHUNK_TIMEOUT)).connect(url.as_str()).await?;
    // Sized and touched before the clock starts, as in asyncnats_backup.
    let mut archive = vec![1u8; bytes + (1 << 20)];
    archive.clear();
    let (response, snapshot_s) = transfer::snapshot(&client, STREAM, chunk_size, &mut archive).await?;
    if archive.len() != bytes {
        return Err(format!("snapshot: {} bytes of {bytes}", archive.len()).into());
    }
    let request = json!({"config": response["config"], "state": response["state"]});
    let (_, upload_s, restore_s) = transfer::restore(&client, STREAM, request, &archive, chunk_size).await?;
    drop(client);
    let uploaded = server.join().map_err(|_| "the stand-in server panicked")??;
    if uploaded != bytes {
        return Err(format!("restore: the server read {uploaded} bytes of {bytes}").into());
    }
    let mib_per_s = |seconds: f64| bytes as f64 / 1_048_576.0 / seconds;
    println!(
        "{}",
        json!({
            "client": "async-nats-backup-ceiling",
            "bytes": bytes,
            "chunk_size": chunk_size,
            "snapshot_s": snapshot_s,
            "restore_upload_s": upload_s,
            "restore_s": restore_s,
            "snapshot_mib_per_s": mib_per_s(snapshot_s),
            "restore_upload_mib_per_s": mib_per_s(upload_s),
        })
    );
    Ok(())
}

/// A snapshot being streamed to the client.
struct Sending {
    deliver: String,
    sid: String,
    chunk: Vec<u8>,
    left: usize,
    sent: u64,
    acked: u64,
    in_flight_max: u64,
}

/// The stand-in server's one connection.
struct StandIn {
    socket: TcpStream,
    out: BufWriter<TcpStream>,
    /// (subject pattern, sid) of the client's subscriptions.
    subscriptions: Vec<(String, String)>,
    snapshot_bytes: usize,
    sending: Option<Sending>,
    uploaded: usize,
    /// The end of the upload was answered: nothing is left to serve.
    restored: bool,
}

/// One client operation, parsed.
enum Op {
    Ping,
    Sub { subject: String, sid: String },
    Pub { subject: String, reply: Option<String>, payload: Vec<u8> },
    Other,
}

impl StandIn {
    fn accept(listener: &TcpListener, snapshot_bytes: usize) -> io::Result<StandIn> {
        let (socket, _) = listener.accept()?;
        socket.set_nodelay(true)?;
        let mut out = BufWriter::with_capacity(1 << 20, socket.try_clone()?);
        out.write_all(INFO.as_bytes())?;
        out.flush()?;
        Ok(StandIn {
            socket,
            out,
            subscriptions: Vec::new(),
            snapshot_bytes,
            sending: None,
            uploaded: 0,
            restored: false,
        })
    }

    /// Serves until the restore has ended (or the client hangs up); returns the restore
    /// bytes it read.
    fn serve(mut self) -> io::Result<usize> {
        let mut buffer: Vec<u8> = Vec::with_capacity(4 << 20);
        let mut read = vec![0u8; 1 << 20];
        loop {
            let count = self.socket.read(&mut read)?;
            if count == 0 {
                return Ok(self.uploaded);
            }
            buffer.extend_from_slice(&read[..count]);
            let mut at = 0;
            while let Some((op, used)) = parse(&buffer[at..]) {
                at += used;
                self.handle(op)?;
            }
            buffer.drain(..at);
            self.send_chunks()?;
            self.out.flush()?;
            if self.restored {
                return Ok(self.uploaded);
            }
        }
    }

    fn handle(&mut self, op: Op) -> io::Result<()> {
        match op {
            Op::Ping => self.out.write_all(b"PONG\r\n"),
            Op::Sub { subject, sid } => {
                self.subscriptions.push((subject, sid));
                Ok(())
            }
            Op::Pub { subject, reply, payload } => self.publish(&subject, reply.as_deref(), &payload),
            Op::Other => Ok(()),
        }
    }

    fn publish(&mut self, subject: &str, reply: Option<&str>, payload: &[u8]) -> io::Result<()> {
        if subject.starts_with(SNAPSHOT_ACK_PREFIX) {
            if let Some(sending) = &mut self.sending {
                sending.acked += 1;
            }
            return Ok(());
        }
        let Some(reply) = reply else { return Ok(()) };
        if subject == format!("$JS.API.STREAM.SNAPSHOT.{STREAM}") {
            let request: Value = serde_json::from_slice(payload).unwrap_or_default();
            let deliver = request["deliver_subject"].as_str().unwrap_or_default().to_string();
            let chunk_bytes = request["chunk_size"].as_u64().unwrap_or(128 << 10) as usize;
            let sid = self.sid_for(&deliver).unwrap_or_default();
            self.answer(reply, json!({"config": {"name": STREAM}, "state": {"messages": 0}}))?;
            let in_flight_max = (WINDOW_BYTES / chunk_bytes).max(1) as u64;
            let chunk = (0..chunk_bytes).map(|index| (index * 31 % 251) as u8).collect();
            let left = self.snapshot_bytes;
            self.sending = Some(Sending { deliver, sid, chunk, left, sent: 0, acked: 0, in_flight_max });
        } else if subject == format!("$JS.API.STREAM.RESTORE.{STREAM}") {
            self.answer(reply, json!({"deliver_subject": UPLOAD_SUBJECT}))?;
        } else if subject == UPLOAD_SUBJECT && !payload.is_empty() {
            self.uploaded += payload.len();
            self.message(reply, None, b"")?;
        } else if subject == UPLOAD_SUBJECT {
            self.restored = true;
            self.answer(reply, json!({"config": {"name": STREAM}, "state": {}, "did_create": false}))?;
        }
        Ok(())
    }

    /// Sends snapshot chunks while the window has room, then the end-of-transfer message.
    fn send_chunks(&mut self) -> io::Result<()> {
        let Some(mut sending) = self.sending.take() else { return Ok(()) };
        while sending.left > 0 && sending.sent - sending.acked < sending.in_flight_max {
            let length = sending.left.min(sending.chunk.len());
            sending.sent += 1;
            let ack = format!("{SNAPSHOT_ACK_PREFIX}{STREAM}.1.{}.{}", sending.chunk.len(), sending.sent);
            write!(self.out, "MSG {} {} {ack} {length}\r\n", sending.deliver, sending.sid)?;
            self.out.write_all(&sending.chunk[..length])?;
            self.out.write_all(b"\r\n")?;
            sending.left -= length;
        }
        if sending.left == 0 {
            write!(self.out, "MSG {} {} 0\r\n\r\n", sending.deliver, sending.sid)?;
        } else {
            self.sending = Some(sending);
        }
        Ok(())
    }

    fn answer(&mut self, reply: &str, body: Value) -> io::Result<()> {
        self.message(reply, None, body.to_string().as_bytes())
    }

    fn message(&mut self, subject: &str, reply: Option<&str>, payload: &[u8]) -> io::Result<()> {
        let Some(sid) = self.sid_for(subject) else { return Ok(()) };
        let reply = reply.map(|reply| format!(" {reply}")).unwrap_or_default();
        write!(self.out, "MSG {subject} {sid}{reply} {}\r\n", payload.len())?;
        self.out.write_all(payload)?;
        self.out.write_all(b"\r\n")
    }

    fn sid_for(&self, subject: &str) -> Option<String> {
        self.subscriptions.iter().find(|(pattern, _)| matches(pattern, subject)).map(|(_, sid)| sid.clone())
    }
}

/// NATS subject matching with `*` and `>`.
fn matches(pattern: &str, subject: &str) -> bool {
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
            let payload = buffer[after_line + headers..after_line + total].to_vec();
            return Some((Op::Pub { subject: words[0].to_string(), reply, payload }, after_line + total + 2));
        }
        _ => Op::Other,
    };
    Some((op, after_line))
}
