//! The machine's own floor for `latency`: the same paced publisher and the same receiving
//! thread, with no NATS server between them. A relay thread inside jetbench stands where
//! the server would (read from the publisher's socket, write to the subscriber's), so a
//! message takes the same two loopback hops and the same three thread wake-ups as a core
//! publish through a server that does nothing else. What a server adds is measured against
//! this, in the same run (`--via loopback`; `--url` is ignored).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use super::{read_stamp, stamp, Context, Headline, Outcome};
use crate::error::Result;
use crate::latency::LatencyRecorder;
use crate::limits::{DEFAULT_LATENCY_RATE, TIMESTAMP_BYTES};
use crate::pacing::Pacer;

pub fn run(context: &Context) -> Result<Outcome> {
    let frame = context.options.size.max(TIMESTAMP_BYTES);
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    let publisher = TcpStream::connect(address)?;
    let (from_publisher, _) = listener.accept()?;
    let subscriber = TcpStream::connect(address)?;
    let (to_subscriber, _) = listener.accept()?;
    for socket in [&publisher, &from_publisher, &subscriber, &to_subscriber] {
        socket.set_nodelay(true)?;
    }
    let epoch = Instant::now();
    let relay = std::thread::spawn(move || relay(from_publisher, to_subscriber));
    let receiver = std::thread::spawn(move || receive(subscriber, frame, epoch));
    let published = publish(context, publisher, frame, epoch)?;
    relay.join().expect("relay thread")?;
    let (received, latency, last) = receiver.join().expect("receiver thread")?;
    Ok(Outcome {
        elapsed: last.map(|last| last.duration_since(epoch)).unwrap_or_default(),
        published,
        received,
        acknowledged: 0,
        headline: Headline::Received,
        latency: Some(latency),
        memory: None,
        errors: (received < published)
            .then(|| format!("{} of {published} frames lost", published - received))
            .into_iter()
            .collect(),
    })
}

/// Sends stamped frames on schedule, then closes its socket; returns how many it sent.
fn publish(context: &Context, mut socket: TcpStream, frame: usize, epoch: Instant) -> Result<u64> {
    let mut payload = vec![0u8; frame];
    let limit = context.limit_for(0, 1);
    let start = Instant::now();
    let pacer = Pacer::new(context.options.rate.unwrap_or(DEFAULT_LATENCY_RATE), start);
    let mut sent = 0u64;
    while !limit.reached(sent, start, Instant::now()) {
        pacer.sleep_until_due(sent);
        stamp(&mut payload, epoch, pacer.intended_time(sent));
        socket.write_all(&payload)?;
        sent += 1;
    }
    Ok(sent)
}

/// Copies bytes from the publisher to the subscriber until the publisher closes.
fn relay(mut from: TcpStream, mut to: TcpStream) -> Result<()> {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = from.read(&mut buffer)?;
        if read == 0 {
            return Ok(());
        }
        to.write_all(&buffer[..read])?;
    }
}

/// Reads whole frames until the relay closes; records each one's latency.
fn receive(mut socket: TcpStream, frame: usize, epoch: Instant) -> Result<(u64, LatencyRecorder, Option<Instant>)> {
    let mut latency = LatencyRecorder::new();
    let mut buffer = vec![0u8; frame];
    let (mut received, mut last) = (0u64, None);
    loop {
        match socket.read_exact(&mut buffer) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(error) => return Err(error.into()),
        }
        let now = Instant::now();
        if let Some(sent) = read_stamp(&buffer, epoch) {
            latency.record(now.duration_since(sent));
        }
        received += 1;
        last = Some(now);
    }
    Ok((received, latency, last))
}
