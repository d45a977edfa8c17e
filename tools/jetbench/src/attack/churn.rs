//! Connection churn: short-lived connections in a loop (a flapping client, a health
//! check, an attacker that never logs in) and a storm of connections held open at once.
//! Each reports the server's RSS before, at its peak and 5 s after the loop: memory a
//! closed connection keeps shows as an "after" that stays near the peak.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::attacks::Outcome;
use super::probe::resident_bytes;

/// Rounds of each churn loop, and connections of the storm (issue 33's figures).
const CHURN_ROUNDS: usize = 30_000;
const STORM_CONNECTIONS: usize = 3_000;
/// How long after the loop the "settled" RSS is read.
const SETTLE: Duration = Duration::from_secs(5);

/// What a churning client does between connect and close.
#[derive(Clone, Copy)]
pub enum Churn {
    /// Connect and close at once, sending nothing.
    Close,
    /// Read INFO, then close.
    Info,
    /// Read INFO, send `CONNECT {}`, close.
    Connect,
    /// Read INFO, send `CONNECT {}` and `SUB`, close.
    Subscribe,
    /// Connect and close with RST (SO_LINGER 0).
    Reset,
    /// The full handshake: INFO, CONNECT, PING, wait for PONG, close.
    Handshake,
}

pub fn churn(port: u16, pid: u32, kind: Churn) -> Outcome {
    let before = resident_bytes(pid);
    let mut peak = before;
    let started = Instant::now();
    for round in 0..CHURN_ROUNDS {
        one_round(port, kind).map_err(|error| format!("round {round}: {error}"))?;
        if round % 500 == 0 {
            peak = peak.max(resident_bytes(pid));
        }
    }
    let rate = CHURN_ROUNDS as f64 / started.elapsed().as_secs_f64();
    peak = peak.max(resident_bytes(pid));
    std::thread::sleep(SETTLE);
    Ok(report(CHURN_ROUNDS, rate, before, peak, resident_bytes(pid)))
}

/// `STORM_CONNECTIONS` connections opened as fast as possible, each through the full
/// handshake, held until all are open, then closed together.
pub fn storm(port: u16, pid: u32) -> Outcome {
    let before = resident_bytes(pid);
    let started = Instant::now();
    let mut open = Vec::with_capacity(STORM_CONNECTIONS);
    let mut peak = before;
    for index in 0..STORM_CONNECTIONS {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connection {index}: {e}"))?;
        stream.write_all(b"CONNECT {\"verbose\":false}\r\nPING\r\n").map_err(|e| e.to_string())?;
        open.push(stream);
        if index % 250 == 0 {
            peak = peak.max(resident_bytes(pid));
        }
    }
    for stream in &mut open {
        stream.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| e.to_string())?;
        read_until(stream, b"PONG\r\n").map_err(|e| format!("no PONG: {e}"))?;
    }
    let rate = STORM_CONNECTIONS as f64 / started.elapsed().as_secs_f64();
    peak = peak.max(resident_bytes(pid));
    drop(open);
    std::thread::sleep(SETTLE);
    Ok(report(STORM_CONNECTIONS, rate, before, peak, resident_bytes(pid)))
}

fn one_round(port: u16, kind: Churn) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    match kind {
        Churn::Close => {}
        Churn::Info => read_until(&mut stream, b"\r\n")?,
        Churn::Connect => {
            read_until(&mut stream, b"\r\n")?;
            stream.write_all(b"CONNECT {}\r\n")?;
        }
        Churn::Subscribe => {
            read_until(&mut stream, b"\r\n")?;
            stream.write_all(b"CONNECT {}\r\nSUB churn.> 1\r\n")?;
        }
        Churn::Reset => {
            // SO_LINGER with a zero timeout: close sends RST instead of FIN.
            let linger = libc::linger { l_onoff: 1, l_linger: 0 };
            // SAFETY: setsockopt on a descriptor we own, with a correctly sized value.
            unsafe {
                use std::os::fd::AsRawFd;
                libc::setsockopt(
                    stream.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&linger as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                );
            }
        }
        Churn::Handshake => {
            read_until(&mut stream, b"\r\n")?;
            stream.write_all(b"CONNECT {\"verbose\":false}\r\nPING\r\n")?;
            read_until(&mut stream, b"PONG\r\n")?;
        }
    }
    Ok(())
}

/// Reads until `marker` has been seen.
fn read_until(stream: &mut TcpStream, marker: &[u8]) -> std::io::Result<()> {
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    while !seen.windows(marker.len()).any(|window| window == marker) {
        let read = stream.read(&mut chunk)?;
        if read == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed"));
        }
        seen.extend_from_slice(&chunk[..read]);
    }
    Ok(())
}

fn report(count: usize, rate: f64, before: u64, peak: u64, after: u64) -> String {
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    format!(
        "{count} connections at {rate:.0}/s; RSS {:.0} MiB before, {:.0} peak, {:.0} {}s after ({:.2}x)",
        mib(before),
        mib(peak),
        mib(after),
        SETTLE.as_secs(),
        after as f64 / before.max(1) as f64
    )
}
