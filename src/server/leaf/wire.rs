//! The leaf protocol as the spoke reads and writes it: pure functions over byte slices.
//! Reading: `INFO`, `PING`, `PONG`, `+OK`, `-ERR`, `LS+`, `LS-`, `LMSG`, `HMSG` from the
//! hub. Writing: `CONNECT`, `LS+`/`LS-`, `LMSG`/`HMSG` (nats-server `leafnode.go`,
//! `client.go`: `processLeafSub`, `processLeafMsgArgs`, `msgHeaderForRouteOrLeaf`).

use bytes::{BufMut, Bytes};

/// One operation from the hub, borrowing the read buffer.
#[derive(Debug, PartialEq)]
pub enum HubOp<'a> {
    Info(&'a [u8]),
    Ping,
    Pong,
    Ok,
    Err(&'a [u8]),
    /// `LS+ subject [queue weight]`
    Subscribe {
        subject: &'a [u8],
        queue: Option<&'a [u8]>,
    },
    /// `LS- subject [queue]`
    Unsubscribe {
        subject: &'a [u8],
        queue: Option<&'a [u8]>,
    },
    Message(LeafMessage<'a>),
}

/// An `LMSG`/`HMSG` from the hub.
#[derive(Debug, PartialEq)]
pub struct LeafMessage<'a> {
    pub subject: &'a [u8],
    pub reply: Option<&'a [u8]>,
    /// Queue groups the hub chose this link for; empty: plain subscribers only.
    pub queues: Vec<Bytes>,
    pub headers: Option<&'a [u8]>,
    pub payload: &'a [u8],
}

#[derive(Debug, PartialEq)]
pub enum WireError {
    /// Not a whole operation yet: read more.
    Incomplete,
    Invalid(String),
}

/// Parses the first operation in `buffer`; returns it and the bytes it took.
pub fn parse(buffer: &[u8], payload_max: usize) -> Result<(HubOp<'_>, usize), WireError> {
    let line_end = buffer.windows(2).position(|pair| pair == b"\r\n").ok_or(WireError::Incomplete)?;
    let line = &buffer[..line_end];
    let after_line = line_end + 2;
    let (verb, rest) = match line.iter().position(|byte| *byte == b' ' || *byte == b'\t') {
        Some(space) => (&line[..space], trim(&line[space + 1..])),
        None => (line, &line[line.len()..]),
    };
    let arguments: Vec<&[u8]> = rest.split(|byte| *byte == b' ' || *byte == b'\t').filter(|a| !a.is_empty()).collect();
    let op = match verb.to_ascii_uppercase().as_slice() {
        b"INFO" => HubOp::Info(rest),
        b"PING" => HubOp::Ping,
        b"PONG" => HubOp::Pong,
        b"+OK" => HubOp::Ok,
        b"-ERR" => HubOp::Err(rest),
        b"LS+" => match arguments.as_slice() {
            [subject] => HubOp::Subscribe { subject, queue: None },
            [subject, queue, ..] => HubOp::Subscribe { subject, queue: Some(queue) },
            _ => return Err(invalid(line)),
        },
        b"LS-" => match arguments.as_slice() {
            [subject] => HubOp::Unsubscribe { subject, queue: None },
            [subject, queue, ..] => HubOp::Unsubscribe { subject, queue: Some(queue) },
            _ => return Err(invalid(line)),
        },
        b"LMSG" => return message(buffer, after_line, &arguments, false, payload_max).map_err(|e| or_line(e, line)),
        b"HMSG" => return message(buffer, after_line, &arguments, true, payload_max).map_err(|e| or_line(e, line)),
        _ => return Err(invalid(line)),
    };
    Ok((op, after_line))
}

fn message<'a>(
    buffer: &'a [u8],
    start: usize,
    arguments: &[&'a [u8]],
    with_headers: bool,
    payload_max: usize,
) -> Result<(HubOp<'a>, usize), WireError> {
    let sizes = if with_headers { 2 } else { 1 };
    if arguments.len() < 1 + sizes {
        return Err(WireError::Invalid(String::new()));
    }
    let (names, size_arguments) = arguments.split_at(arguments.len() - sizes);
    let subject = names[0];
    let (reply, queues) = match names.get(1).copied() {
        None => (None, &names[names.len()..]),
        Some(b"+") if names.len() >= 3 => (Some(names[2]), &names[3..]),
        Some(b"|") => (None, &names[2..]),
        Some(reply) if names.len() == 2 => (Some(reply), &names[names.len()..]),
        Some(_) => return Err(WireError::Invalid(String::new())),
    };
    let total = decimal(size_arguments[sizes - 1])?;
    let header_size = if with_headers { decimal(size_arguments[0])? } else { 0 };
    if header_size > total || total > payload_max {
        return Err(WireError::Invalid(String::new()));
    }
    let end = start + total;
    if buffer.len() < end + 2 {
        return Err(WireError::Incomplete);
    }
    if &buffer[end..end + 2] != b"\r\n" {
        return Err(WireError::Invalid(String::new()));
    }
    let headers = with_headers.then(|| &buffer[start..start + header_size]);
    let message = LeafMessage {
        subject,
        reply,
        queues: queues.iter().map(|queue| Bytes::copy_from_slice(queue)).collect(),
        headers,
        payload: &buffer[start + header_size..end],
    };
    Ok((HubOp::Message(message), end + 2))
}

fn decimal(text: &[u8]) -> Result<usize, WireError> {
    std::str::from_utf8(text).ok().and_then(|t| t.parse().ok()).ok_or(WireError::Invalid(String::new()))
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |last| last + 1);
    &bytes[start..end]
}

fn invalid(line: &[u8]) -> WireError {
    WireError::Invalid(String::from_utf8_lossy(line).into_owned())
}

fn or_line(error: WireError, line: &[u8]) -> WireError {
    match error {
        WireError::Invalid(text) if text.is_empty() => invalid(line),
        other => other,
    }
}

/// `LS+ subject [queue weight]\r\n`
pub fn encode_subscribe(out: &mut Vec<u8>, subject: &[u8], queue: Option<(&[u8], u32)>) {
    out.put_slice(b"LS+ ");
    out.put_slice(subject);
    if let Some((queue, weight)) = queue {
        out.put_u8(b' ');
        out.put_slice(queue);
        out.put_slice(format!(" {weight}").as_bytes());
    }
    out.put_slice(b"\r\n");
}

/// `LS- subject [queue]\r\n`
pub fn encode_unsubscribe(out: &mut Vec<u8>, subject: &[u8], queue: Option<&[u8]>) {
    out.put_slice(b"LS- ");
    out.put_slice(subject);
    if let Some(queue) = queue {
        out.put_u8(b' ');
        out.put_slice(queue);
    }
    out.put_slice(b"\r\n");
}

/// `LMSG subject [reply] size` or, for queue groups, `LMSG subject + reply q… size` /
/// `LMSG subject | q… size`; `HMSG` alike with the header size before the total.
pub fn encode_message(
    out: &mut Vec<u8>,
    subject: &[u8],
    reply: Option<&[u8]>,
    queues: &[&Bytes],
    headers: Option<&[u8]>,
    payload: &[u8],
) {
    out.put_slice(if headers.is_some() { b"HMSG " } else { b"LMSG " });
    out.put_slice(subject);
    match (queues.is_empty(), reply) {
        (true, Some(reply)) => {
            out.put_u8(b' ');
            out.put_slice(reply);
        }
        (true, None) => {}
        (false, Some(reply)) => {
            out.put_slice(b" + ");
            out.put_slice(reply);
        }
        (false, None) => out.put_slice(b" |"),
    }
    for queue in queues {
        out.put_u8(b' ');
        out.put_slice(queue);
    }
    let header_size = headers.map_or(0, <[u8]>::len);
    if headers.is_some() {
        out.put_slice(format!(" {header_size}").as_bytes());
    }
    out.put_slice(format!(" {}\r\n", header_size + payload.len()).as_bytes());
    if let Some(headers) = headers {
        out.put_slice(headers);
    }
    out.put_slice(payload);
    out.put_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_with_and_without_queues() {
        let group = Bytes::from_static(b"workers");
        let cases: [(Option<&[u8]>, Vec<&Bytes>, Option<&[u8]>); 4] = [
            (None, vec![], None),
            (Some(b"_INBOX.1"), vec![], Some(b"NATS/1.0\r\n\r\n")),
            (Some(b"_INBOX.2"), vec![&group], None),
            (None, vec![&group], Some(b"NATS/1.0\r\n\r\n")),
        ];
        for (reply, queues, headers) in cases {
            let mut out = Vec::new();
            encode_message(&mut out, b"orders.1", reply, &queues, headers, b"hello");
            let (op, used) = parse(&out, 1024).unwrap();
            assert_eq!(used, out.len());
            let HubOp::Message(message) = op else { panic!("{op:?}") };
            assert_eq!((message.subject, message.reply, message.headers), (&b"orders.1"[..], reply, headers));
            assert_eq!(message.queues.len(), queues.len());
            assert_eq!(message.payload, b"hello");
        }
    }

    #[test]
    fn literal_bytes_of_the_hub_side() {
        let mut out = Vec::new();
        encode_message(&mut out, b"foo", Some(b"bar"), &[&Bytes::from_static(b"q")], None, b"hi");
        assert_eq!(out, b"LMSG foo + bar q 2\r\nhi\r\n");
        let (op, _) = parse(b"LS+ foo q 2\r\n", 10).unwrap();
        assert_eq!(op, HubOp::Subscribe { subject: b"foo", queue: Some(b"q") });
        assert_eq!(parse(b"LMSG foo 5\r\nhel", 10), Err(WireError::Incomplete));
        assert!(matches!(parse(b"LMSG foo 50\r\n", 10), Err(WireError::Invalid(_))));
    }
}
