//! A minimal blocking client for attacks: raw bytes out, lines and messages in. It is
//! deliberately dumb (no reconnects, no buffering beyond the socket's) so an attack sends
//! exactly what it says.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

pub struct Wire {
    pub stream: TcpStream,
    reader: BufReader<TcpStream>,
}

/// What the server sent next.
#[derive(Debug)]
pub enum Frame {
    /// A protocol line (`-ERR …`, `PONG`, `+OK`), CRLF removed.
    Line(String),
    /// A message: its status line (`HMSG`) or empty, and its payload.
    Message { status: String, payload: Vec<u8> },
    /// The connection closed (or the read timed out: `timeout` true).
    Closed { timeout: bool },
}

impl Wire {
    pub fn connect(port: u16, read_timeout: Duration) -> std::io::Result<Wire> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(read_timeout))?;
        let mut reader = BufReader::new(stream.try_clone()?);
        let mut info = String::new();
        reader.read_line(&mut info)?;
        let mut wire = Wire { stream, reader };
        wire.send(b"CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,\"protocol\":1}\r\n")?;
        Ok(wire)
    }

    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// The next frame, answering server PINGs and skipping async INFO lines.
    pub fn next(&mut self) -> Frame {
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => return Frame::Closed { timeout: false },
                Err(error) => {
                    let timeout = matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut);
                    return Frame::Closed { timeout };
                }
                Ok(_) => {}
            }
            let line = line.trim_end().to_string();
            if line == "PING" {
                let _ = self.send(b"PONG\r\n");
                continue;
            }
            if line.starts_with("INFO ") {
                continue;
            }
            let words: Vec<&str> = line.split(' ').collect();
            let (header_bytes, total_bytes) = match words[0] {
                "MSG" => (0, words.last().and_then(|w| w.parse::<usize>().ok()).unwrap_or(0)),
                "HMSG" => {
                    let total = words.last().and_then(|w| w.parse::<usize>().ok()).unwrap_or(0);
                    let header = words.get(words.len() - 2).and_then(|w| w.parse::<usize>().ok()).unwrap_or(0);
                    (header, total)
                }
                _ => return Frame::Line(line),
            };
            let mut body = vec![0u8; total_bytes + 2];
            if self.reader.read_exact(&mut body).is_err() {
                return Frame::Closed { timeout: false };
            }
            body.truncate(total_bytes);
            let status = String::from_utf8_lossy(&body[..header_bytes]).lines().next().unwrap_or("").to_string();
            let payload = body.split_off(header_bytes);
            return Frame::Message { status, payload };
        }
    }

    /// Sends PING and waits for its PONG; returns the lines seen before it (errors).
    pub fn round_trip(&mut self) -> Result<Vec<String>, Vec<String>> {
        let mut seen = Vec::new();
        if self.send(b"PING\r\n").is_err() {
            return Err(seen);
        }
        loop {
            match self.next() {
                Frame::Line(line) if line == "PONG" => return Ok(seen),
                Frame::Line(line) => seen.push(line),
                Frame::Message { .. } => {}
                Frame::Closed { .. } => return Err(seen),
            }
        }
    }

    /// A JetStream API request on its own inbox; the reply's payload (or status line).
    pub fn request(&mut self, inbox: &str, subject: &str, body: &str) -> Option<String> {
        let publish =
            format!("SUB {inbox} {inbox}\r\nPUB {subject} {inbox} {}\r\n{body}\r\nUNSUB {inbox} 1\r\n", body.len());
        self.send(publish.as_bytes()).ok()?;
        match self.next() {
            Frame::Message { payload, .. } => Some(String::from_utf8_lossy(&payload).into_owned()),
            Frame::Line(line) => Some(line),
            Frame::Closed { .. } => None,
        }
    }
}
