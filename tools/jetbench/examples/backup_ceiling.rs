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

#[path = "standin/connection.rs"]
mod standin;
#[path = "backup/transfer.rs"]
mod transfer;

use std::io;
use std::net::TcpListener;

use serde_json::{json, Value};

use standin::{Connection, Handler, Publish};
use transfer::CHUNK_TIMEOUT;

const STREAM: &str = "CEILING";
/// Chunks awaiting their ack at most: nats-server's and jetcore's default window.
const WINDOW_BYTES: usize = 8 << 20;
const SNAPSHOT_ACK_PREFIX: &str = "$JS.SNAPSHOT.ACK.";
const UPLOAD_SUBJECT: &str = "$JS.RESTORE.IN.CEILING";

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
    let server = std::thread::spawn(move || Backups::serve(&listener, bytes));

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
    chunk: Vec<u8>,
    left: usize,
    sent: u64,
    acked: u64,
    in_flight_max: u64,
}

/// The stand-in's backup work: none, only the protocol.
struct Backups {
    snapshot_bytes: usize,
    sending: Option<Sending>,
    uploaded: usize,
    /// The end of the upload was answered: nothing is left to serve.
    restored: bool,
}

impl Backups {
    fn serve(listener: &TcpListener, snapshot_bytes: usize) -> io::Result<usize> {
        let connection = Connection::accept(listener)?;
        let mut backups = Backups { snapshot_bytes, sending: None, uploaded: 0, restored: false };
        connection.serve(&mut backups)?;
        Ok(backups.uploaded)
    }
}

fn answer(connection: &mut Connection, reply: &str, body: Value) -> io::Result<()> {
    connection.message(reply, None, body.to_string().as_bytes())
}

impl Handler for Backups {
    fn publish(&mut self, connection: &mut Connection, publish: Publish<'_>) -> io::Result<()> {
        let Publish { subject, reply, payload } = publish;
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
            answer(connection, reply, json!({"config": {"name": STREAM}, "state": {"messages": 0}}))?;
            let in_flight_max = (WINDOW_BYTES / chunk_bytes).max(1) as u64;
            let chunk = (0..chunk_bytes).map(|index| (index * 31 % 251) as u8).collect();
            let left = self.snapshot_bytes;
            self.sending = Some(Sending { deliver, chunk, left, sent: 0, acked: 0, in_flight_max });
        } else if subject == format!("$JS.API.STREAM.RESTORE.{STREAM}") {
            answer(connection, reply, json!({"deliver_subject": UPLOAD_SUBJECT}))?;
        } else if subject == UPLOAD_SUBJECT && !payload.is_empty() {
            self.uploaded += payload.len();
            connection.message(reply, None, b"")?;
        } else if subject == UPLOAD_SUBJECT {
            self.restored = true;
            answer(connection, reply, json!({"config": {"name": STREAM}, "state": {}, "did_create": false}))?;
        }
        Ok(())
    }

    /// Sends snapshot chunks while the window has room, then the end-of-transfer message.
    fn pump(&mut self, connection: &mut Connection) -> io::Result<()> {
        let Some(mut sending) = self.sending.take() else { return Ok(()) };
        while sending.left > 0 && sending.sent - sending.acked < sending.in_flight_max {
            let length = sending.left.min(sending.chunk.len());
            sending.sent += 1;
            let ack = format!("{SNAPSHOT_ACK_PREFIX}{STREAM}.1.{}.{}", sending.chunk.len(), sending.sent);
            connection.message(&sending.deliver, Some(&ack), &sending.chunk[..length])?;
            sending.left -= length;
        }
        if sending.left == 0 {
            connection.message(&sending.deliver, None, b"")?;
        } else {
            self.sending = Some(sending);
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.restored
    }
}
