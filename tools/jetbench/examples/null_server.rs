//! A NATS "server" that accepts connections, completes the handshake and discards whatever
//! it receives, answering each `PING` with `PONG`. It measures a client's own publish
//! ceiling (no broker work at all), e.g. jetbench `pub` against async-nats.
//!
//! Usage: null_server [PORT]   (default 14999). Runs until killed.
//! Only for payloads that cannot contain the bytes `PING\r\n` (jetbench's and
//! asyncnats_pub's are lowercase letters).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

const DEFAULT_PORT: u16 = 14999;
const READ_BUFFER_BYTES: usize = 1024 * 1024;
const PING: &[u8] = b"PING\r\n";
const INFO: &str = concat!(
    r#"INFO {"server_id":"NULL","server_name":"null","version":"2.11.0","proto":1,"#,
    r#""go":"none","host":"127.0.0.1","port":0,"headers":true,"max_payload":1048576}"#,
    "\r\n"
);

fn main() -> std::io::Result<()> {
    let port = std::env::args().nth(1).and_then(|text| text.parse().ok()).unwrap_or(DEFAULT_PORT);
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    eprintln!("null_server listening on 127.0.0.1:{port}");
    for stream in listener.incoming() {
        let stream = stream?;
        std::thread::spawn(move || {
            let _ = serve(stream);
        });
    }
    Ok(())
}

/// Counts `PING\r\n` occurrences, including one split across two reads.
fn serve(mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    stream.write_all(INFO.as_bytes())?;
    let mut buffer = vec![0u8; READ_BUFFER_BYTES + PING.len()];
    let mut carried = 0;
    loop {
        let read = stream.read(&mut buffer[carried..])?;
        if read == 0 {
            return Ok(());
        }
        let filled = carried + read;
        let pings = memchr::memmem::find_iter(&buffer[..filled], PING).count();
        for _ in 0..pings {
            stream.write_all(b"PONG\r\n")?;
        }
        // Keep the last bytes (too few to be a whole PING, so none is counted twice) so a PING
        // split across two reads is still found.
        carried = (PING.len() - 1).min(filled);
        buffer.copy_within(filled - carried..filled, 0);
    }
}
