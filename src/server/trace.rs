//! Human-readable protocol tracing for `-V` (nats-server prints `<<- [OP args]`).

use crate::protocol::ClientOp;

/// One line describing an op, payloads shown by size only.
pub fn describe(op: &ClientOp<'_>) -> String {
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    match op {
        ClientOp::Connect { json } => format!("[CONNECT {}]", text(json)),
        ClientOp::Pub { subject, reply, headers, payload } => format!(
            "[{} {} {} headers={} payload={}]",
            if headers.is_some() { "HPUB" } else { "PUB" },
            text(subject),
            reply.map(text).unwrap_or_default(),
            headers.map_or(0, |h| h.len()),
            payload.len()
        ),
        ClientOp::Sub { subject, queue, sid } => {
            format!("[SUB {} {} {}]", text(subject), queue.map(text).unwrap_or_default(), text(sid))
        }
        ClientOp::Unsub { sid, max } => format!("[UNSUB {} {:?}]", text(sid), max),
        ClientOp::Ping => "[PING]".to_string(),
        ClientOp::Pong => "[PONG]".to_string(),
        ClientOp::Info { .. } => "[INFO]".to_string(),
        ClientOp::Ok => "[+OK]".to_string(),
        ClientOp::Err { text: message } => format!("[-ERR {}]", text(message)),
    }
}
