//! acceptbench: how many client connections per second a server accepts and serves.
//!
//! ```text
//! cargo run --release --bin acceptbench -- ADDRESS [--seconds S] [--clients N]
//! ```
//!
//! Two loops, each run by `--clients` threads for `--seconds`:
//! - `connect/close`: connect, read the INFO line (so the server accepted and served the
//!   connection, not just the kernel's backlog), close.
//! - `connect+PING`: connect, read INFO, send `CONNECT {}` and `PING`, read up to `PONG`,
//!   close: a reconnect storm of clients that each do one round trip.
//!
//! Prints connections per second for each. Point it at jetcore and at nats-server in the
//! same run: the machine is shared, so only figures from one run compare.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const DEFAULT_SECONDS: u64 = 5;
const DEFAULT_CLIENTS: usize = 4;
const READ_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone, Copy)]
enum Exchange {
    ConnectClose,
    ConnectPing,
}

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let Some(address) = arguments.first().cloned() else {
        eprintln!("usage: acceptbench ADDRESS [--seconds S] [--clients N]");
        std::process::exit(2);
    };
    let seconds = flag(&arguments, "--seconds").unwrap_or(DEFAULT_SECONDS);
    let clients = flag(&arguments, "--clients").unwrap_or(DEFAULT_CLIENTS as u64) as usize;
    for (name, exchange) in [("connect/close", Exchange::ConnectClose), ("connect+PING", Exchange::ConnectPing)] {
        let (completed, failed) = run(&address, exchange, clients, Duration::from_secs(seconds));
        let rate = completed as f64 / seconds as f64;
        println!("{name:<14} {rate:>9.0} conn/s  ({completed} in {seconds} s, {clients} clients, {failed} failed)");
    }
}

fn flag(arguments: &[String], name: &str) -> Option<u64> {
    let index = arguments.iter().position(|argument| argument == name)?;
    arguments.get(index + 1)?.parse().ok()
}

/// Completed and failed exchanges over `length`.
fn run(address: &str, exchange: Exchange, clients: usize, length: Duration) -> (u64, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let completed = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let (address, stop) = (address.to_string(), stop.clone());
            let (completed, failed) = (completed.clone(), failed.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match exchange_once(&address, exchange) {
                        Ok(()) => completed.fetch_add(1, Ordering::Relaxed),
                        Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                    };
                }
            })
        })
        .collect();
    std::thread::sleep(length);
    stop.store(true, Ordering::Relaxed);
    let counted = completed.load(Ordering::Relaxed);
    for worker in workers {
        let _ = worker.join();
    }
    (counted, failed.load(Ordering::Relaxed))
}

fn exchange_once(address: &str, exchange: Exchange) -> std::io::Result<()> {
    let stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    if !line.starts_with("INFO ") {
        return Err(std::io::Error::other(format!("expected INFO, got {line:?}")));
    }
    if let Exchange::ConnectPing = exchange {
        (&stream).write_all(b"CONNECT {\"verbose\":false}\r\nPING\r\n")?;
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Err(std::io::Error::other("closed before PONG"));
            }
            if line.starts_with("PONG") {
                break;
            }
        }
    }
    Ok(())
}
