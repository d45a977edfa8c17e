//! The attacks. Each runs on its own fresh connections against a running server and
//! returns what the server answered, in words, so runs against jetcore and nats-server
//! can be compared line by line.

use std::time::Duration;

use super::churn::{churn, storm, Churn};
use super::wire::{Frame, Wire};

pub type Outcome = Result<String, String>;

pub const NAMES: &[&str] = &[
    "control_line_4097",
    "payload_pub_2mib",
    "payload_hpub_2mib",
    "hpub_header_gt_total",
    "size_2^63",
    "subs_1m_one_connection",
    "subs_1m_100_connections",
    "consumers_10k",
    "pull_batch_2^31",
    "waiting_pulls_600",
    "max_ack_pending_never_ack",
    "slow_consumer_100mib",
    "slow_consumer_200mib_64k",
    "churn_close_30k",
    "churn_info_30k",
    "churn_connect_30k",
    "churn_subscribe_30k",
    "churn_reset_30k",
    "churn_handshake_30k",
    "storm_3000",
];

/// Runs attack `name` against the server on `port` (process `pid`, for the attacks that
/// read its memory themselves).
pub fn run(name: &str, port: u16, pid: u32) -> Outcome {
    match name {
        "control_line_4097" => {
            let mut line = b"PUB ".to_vec();
            line.extend(std::iter::repeat_n(b'a', 4097));
            line.extend_from_slice(b" 1\r\nx\r\n");
            answer_then_close(port, &line)
        }
        "payload_pub_2mib" => answer_then_close(port, b"PUB foo 2097152\r\n"),
        "payload_hpub_2mib" => answer_then_close(port, b"HPUB foo 10 2097152\r\n"),
        "hpub_header_gt_total" => answer_then_close(port, b"HPUB foo 20 10\r\nNATS/1.0\r\n\r\n0123456789\r\n"),
        "size_2^63" => answer_then_close(port, b"PUB foo 9223372036854775808\r\n"),
        "subs_1m_one_connection" => subscriptions(port, 1, 1_000_000),
        "subs_1m_100_connections" => subscriptions(port, 100, 10_000),
        "consumers_10k" => consumers(port, 10_000),
        "pull_batch_2^31" => pull_batch(port),
        "waiting_pulls_600" => waiting_pulls(port, 600),
        "max_ack_pending_never_ack" => never_ack(port),
        "slow_consumer_100mib" => slow_consumer(port, 100, 1 << 20),
        "slow_consumer_200mib_64k" => slow_consumer(port, 3200, 64 << 10),
        "churn_close_30k" => churn(port, pid, Churn::Close),
        "churn_info_30k" => churn(port, pid, Churn::Info),
        "churn_connect_30k" => churn(port, pid, Churn::Connect),
        "churn_subscribe_30k" => churn(port, pid, Churn::Subscribe),
        "churn_reset_30k" => churn(port, pid, Churn::Reset),
        "churn_handshake_30k" => churn(port, pid, Churn::Handshake),
        "storm_3000" => storm(port, pid),
        _ => Err(format!("no attack named {name}")),
    }
}

fn io(error: std::io::Error) -> String {
    error.to_string()
}

/// Sends `bytes` and reports the server's lines until it closes (or stops answering).
fn answer_then_close(port: u16, bytes: &[u8]) -> Outcome {
    let mut wire = Wire::connect(port, Duration::from_secs(5)).map_err(io)?;
    let _ = wire.send(bytes);
    let _ = wire.send(b"PING\r\n");
    let mut seen = Vec::new();
    loop {
        match wire.next() {
            Frame::Line(line) => seen.push(line),
            Frame::Message { .. } => seen.push("MSG".into()),
            Frame::Closed { timeout } => {
                seen.push(if timeout { "(no close within 5 s)".into() } else { "closed".into() });
                return Ok(seen.join(" / "));
            }
        }
    }
}

/// `per_connection` SUBs on each of `connections` connections, pipelined; each ends with
/// a PING that must be answered.
fn subscriptions(port: u16, connections: usize, per_connection: usize) -> Outcome {
    let mut wires = Vec::with_capacity(connections);
    for connection in 0..connections {
        let mut wire = Wire::connect(port, Duration::from_secs(120)).map_err(io)?;
        let mut chunk = Vec::with_capacity(1 << 20);
        for index in 0..per_connection {
            chunk.extend_from_slice(format!("SUB a.{connection}.{index} {index}\r\n").as_bytes());
            if chunk.len() > (1 << 20) - 64 {
                wire.send(&chunk).map_err(io)?;
                chunk.clear();
            }
        }
        wire.send(&chunk).map_err(io)?;
        wires.push(wire);
    }
    let mut errors = Vec::new();
    for wire in &mut wires {
        match wire.round_trip() {
            Ok(lines) => errors.extend(lines),
            Err(lines) => return Err(format!("connection closed: {lines:?}")),
        }
    }
    let total = connections * per_connection;
    Ok(if errors.is_empty() {
        format!("{total} subscriptions, all PINGs answered")
    } else {
        format!("errors: {:?}", &errors[..errors.len().min(3)])
    })
}

fn create_stream(wire: &mut Wire, name: &str, subjects: &str) -> Result<(), String> {
    let body = format!("{{\"name\":\"{name}\",\"subjects\":[\"{subjects}\"],\"storage\":\"memory\"}}");
    let reply = wire.request("_I.stream", &format!("$JS.API.STREAM.CREATE.{name}"), &body).ok_or("no reply")?;
    if reply.contains("\"error\"") {
        return Err(reply);
    }
    Ok(())
}

fn create_consumer(wire: &mut Wire, stream: &str, name: &str, extra: &str) -> Result<String, String> {
    let body = format!("{{\"stream_name\":\"{stream}\",\"config\":{{\"durable_name\":\"{name}\",\"ack_policy\":\"explicit\"{extra}}}}}");
    wire.request("_I.consumer", &format!("$JS.API.CONSUMER.CREATE.{stream}.{name}"), &body)
        .ok_or_else(|| "no reply".to_string())
}

/// `count` durable consumers on one stream, requests pipelined 100 at a time.
fn consumers(port: u16, count: usize) -> Outcome {
    let mut wire = Wire::connect(port, Duration::from_secs(30)).map_err(io)?;
    create_stream(&mut wire, "MANY", "many.>")?;
    wire.send(b"SUB _I.c.* 1\r\n").map_err(io)?;
    let (mut created, mut failed, mut first_error) = (0, 0, None);
    for start in (0..count).step_by(100) {
        let end = (start + 100).min(count);
        let mut batch = Vec::new();
        for index in start..end {
            let body = format!(
                "{{\"stream_name\":\"MANY\",\"config\":{{\"durable_name\":\"c{index}\",\"ack_policy\":\"explicit\"}}}}"
            );
            batch.extend_from_slice(
                format!("PUB $JS.API.CONSUMER.CREATE.MANY.c{index} _I.c.{index} {}\r\n{body}\r\n", body.len())
                    .as_bytes(),
            );
        }
        wire.send(&batch).map_err(io)?;
        for _ in start..end {
            match wire.next() {
                Frame::Message { payload, .. } => {
                    let reply = String::from_utf8_lossy(&payload).into_owned();
                    if reply.contains("\"error\"") {
                        failed += 1;
                        first_error.get_or_insert(reply);
                    } else {
                        created += 1;
                    }
                }
                other => return Err(format!("after {created} created: {other:?}")),
            }
        }
    }
    Ok(format!(
        "{created} created, {failed} refused{}",
        first_error.map(|e| format!(" (first: {e})")).unwrap_or_default()
    ))
}

/// A pull request for 2^31 messages (more than an i32) on a stream of 10.
fn pull_batch(port: u16) -> Outcome {
    let mut wire = Wire::connect(port, Duration::from_secs(10)).map_err(io)?;
    create_stream(&mut wire, "BIG", "big.>")?;
    for _ in 0..10 {
        wire.send(b"PUB big.x 2\r\nhi\r\n").map_err(io)?;
    }
    create_consumer(&mut wire, "BIG", "puller", "")?;
    let body = "{\"batch\":2147483648,\"expires\":1000000000}";
    let request =
        format!("SUB _I.pull 1\r\nPUB $JS.API.CONSUMER.MSG.NEXT.BIG.puller _I.pull {}\r\n{body}\r\n", body.len());
    wire.send(request.as_bytes()).map_err(io)?;
    let (mut messages, mut statuses) = (0, Vec::new());
    while statuses.is_empty() {
        match wire.next() {
            Frame::Message { status, .. } if status.is_empty() => messages += 1,
            Frame::Message { status, .. } => statuses.push(status),
            Frame::Line(line) => statuses.push(line),
            Frame::Closed { .. } => statuses.push("closed".into()),
        }
    }
    Ok(format!("{messages} messages, then {}", statuses.join(", ")))
}

/// `count` waiting pull requests on a consumer with the default max_waiting (512).
fn waiting_pulls(port: u16, count: usize) -> Outcome {
    let mut wire = Wire::connect(port, Duration::from_secs(10)).map_err(io)?;
    create_stream(&mut wire, "WAIT", "wait.>")?;
    create_consumer(&mut wire, "WAIT", "waiter", "")?;
    wire.send(b"SUB _I.w.* 1\r\n").map_err(io)?;
    let mut batch = Vec::new();
    for index in 0..count {
        let body = "{\"batch\":1,\"expires\":3000000000}";
        batch.extend_from_slice(
            format!("PUB $JS.API.CONSUMER.MSG.NEXT.WAIT.waiter _I.w.{index} {}\r\n{body}\r\n", body.len()).as_bytes(),
        );
    }
    wire.send(&batch).map_err(io)?;
    let mut statuses: std::collections::BTreeMap<String, usize> = Default::default();
    for _ in 0..count {
        match wire.next() {
            Frame::Message { status, .. } => *statuses.entry(status).or_default() += 1,
            Frame::Line(line) => *statuses.entry(line).or_default() += 1,
            Frame::Closed { .. } => break,
        }
    }
    Ok(statuses.iter().map(|(status, n)| format!("{n}× {status}")).collect::<Vec<_>>().join(", "))
}

/// 5 000 messages, a consumer with max_ack_pending 1 000, a pull for all of them, no acks.
fn never_ack(port: u16) -> Outcome {
    let mut wire = Wire::connect(port, Duration::from_secs(10)).map_err(io)?;
    create_stream(&mut wire, "PEND", "pend.>")?;
    let mut batch = Vec::new();
    for _ in 0..5000 {
        batch.extend_from_slice(b"PUB pend.x 2\r\nhi\r\n");
    }
    wire.send(&batch).map_err(io)?;
    create_consumer(&mut wire, "PEND", "lazy", ",\"max_ack_pending\":1000")?;
    let body = "{\"batch\":5000,\"expires\":2000000000}";
    wire.send(
        format!("SUB _I.p 1\r\nPUB $JS.API.CONSUMER.MSG.NEXT.PEND.lazy _I.p {}\r\n{body}\r\n", body.len()).as_bytes(),
    )
    .map_err(io)?;
    let (mut messages, mut status) = (0, String::new());
    while status.is_empty() {
        match wire.next() {
            Frame::Message { status: line, .. } if line.is_empty() => messages += 1,
            Frame::Message { status: line, .. } => status = line,
            Frame::Line(line) => status = line,
            Frame::Closed { .. } => status = "closed".into(),
        }
    }
    Ok(format!("{messages} delivered, then {status}"))
}

/// A subscriber that never reads while 100 MiB is published to its subject.
/// A subscriber that never reads while `count` messages of `size` bytes are published
/// to it.
fn slow_consumer(port: u16, count: usize, size: usize) -> Outcome {
    let mut subscriber = Wire::connect(port, Duration::from_secs(15)).map_err(io)?;
    subscriber.send(b"SUB slow 1\r\n").map_err(io)?;
    subscriber.round_trip().map_err(|lines| format!("{lines:?}"))?;
    let mut publisher = Wire::connect(port, Duration::from_secs(60)).map_err(io)?;
    let mut frame = format!("PUB slow {size}\r\n").into_bytes();
    frame.extend(std::iter::repeat_n(b'x', size));
    frame.extend_from_slice(b"\r\n");
    for _ in 0..count {
        publisher.send(&frame).map_err(io)?;
    }
    let publisher_ok = publisher.round_trip().is_ok();
    // Only now read what reached the subscriber, and how its connection ended.
    let (mut messages, mut end) = (0, String::new());
    while end.is_empty() {
        match subscriber.next() {
            Frame::Message { .. } => messages += 1,
            Frame::Line(line) => end = line,
            Frame::Closed { timeout: true } => end = "still open after 15 s".into(),
            Frame::Closed { timeout: false } => end = "closed".into(),
        }
    }
    Ok(format!(
        "subscriber got {messages} of {count} then {end}; publisher {}",
        if publisher_ok { "answered PING" } else { "closed" }
    ))
}
